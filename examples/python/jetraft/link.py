"""Secure peer links (include/jetraft/link.h): cluster keys, server certificates, and a link —
the handshake and frame sealing a host runs over one connection.

    authority = Key.generate(Key.AUTHORITY)
    identity = Key.generate(Key.IDENTITY)
    cert = sign_cert(authority, identity, cluster="east", name="n1")
    link = Link(Link.DIALER, authority.public_key(), identity, cert, "east", expect_name="n2")
    sock.send(link.pending_out())              # the HELLO; then the AUTH once the peer's came
    used, frame = link.feed(data)              # bytes read, in any split
    if frame is not None:
        node.recv(link.peer_name, frame)       # the peer name the certificate proved
    sock.send(link.seal(frame_for_peer))       # once link.state == Link.OPEN

A Link never touches a socket or a clock; the host drives it with bytes (jetraft.net's PeerHost
does, like jetraft-server's peer links). Errors raise the JetraftError of the code, with
the link's own words (jr_link_errmsg); a link's errors are sticky.
"""

from __future__ import annotations

import ctypes
from ctypes import byref, c_size_t, c_void_p
from typing import Optional

from . import _abi
from ._lib import lib
from .errors import JetraftError, check


def _buf(n: int) -> ctypes.Array:
    return ctypes.create_string_buffer(n)


class Key:
    """One key: a cluster authority's or a server identity's, a pair or a public key alone.
    Its secret bytes are zeroed when it is freed (close(), or when collected)."""

    AUTHORITY = 1
    IDENTITY = 2

    def __init__(self, handle: int) -> None:
        self._h: Optional[int] = handle

    @classmethod
    def generate(cls, role: int) -> "Key":
        out = c_void_p()
        check(lib.jr_link_key_generate(role, None, byref(out)), "key generation")
        return cls(out.value or 0)

    @classmethod
    def decode(cls, data: bytes) -> "Key":
        out = c_void_p()
        check(lib.jr_link_key_decode(data, len(data), None, byref(out)), "key does not decode")
        return cls(out.value or 0)

    @classmethod
    def from_text(cls, text: str) -> "Key":
        return cls.decode(from_text(text))

    def _handle(self) -> int:
        if not self._h:
            raise JetraftError.from_code(-20, "key is closed")  # JR_EMISUSE
        return self._h

    def encode(self, secret: bool = False) -> bytes:
        """The key's bytes: its secret form (the pair) or its public form."""
        buf = _buf(_abi.CONSTANTS["JR_LINK_KEY_BYTES"])
        n = c_size_t()
        check(lib.jr_link_key_encode(self._handle(), int(secret), buf, len(buf), byref(n)),
              "key encode")
        return buf.raw[: n.value]

    def to_text(self, secret: bool = False) -> str:
        return to_text(self.encode(secret))

    @property
    def role(self) -> int:
        return int(lib.jr_link_key_role(self._handle()))

    @property
    def has_secret(self) -> bool:
        return bool(lib.jr_link_key_has_secret(self._handle()))

    @property
    def public(self) -> bytes:
        """The 32-byte Ed25519 public key."""
        out = (ctypes.c_ubyte * 32)()
        lib.jr_link_key_public(self._handle(), out)
        return bytes(out)

    def public_key(self) -> "Key":
        """A Key holding only the public half (what goes into every server's config)."""
        return Key.decode(self.encode(secret=False))

    def close(self) -> None:
        if self._h:
            lib.jr_link_key_free(self._h)
            self._h = None

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> "Key":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sign_cert(authority: Key, identity: Key, cluster: str, name: str) -> bytes:
    """The authority's certificate for `identity` as server `name` of `cluster`."""
    buf = _buf(_abi.CONSTANTS["JR_LINK_CERT_MAX"])
    n = c_size_t()
    check(lib.jr_link_cert_sign(authority._handle(), identity._handle(), cluster.encode(),
                                name.encode(), buf, len(buf), byref(n)), "certificate sign")
    return buf.raw[: n.value]


def check_cert(cert: bytes, authority: Key, cluster: str, name: Optional[str] = None) -> None:
    """Raises AuthError unless cert is the authority's, for cluster (and name, if given)."""
    check(lib.jr_link_cert_check(cert, len(cert), authority._handle(), cluster.encode(),
                                 name.encode() if name is not None else None),
          "certificate check")


def cert_name(cert: bytes) -> str:
    """The server name a certificate names (not a proof of anything: see check_cert)."""
    buf = _buf(_abi.CONSTANTS["JR_LINK_CERT_MAX"])
    check(lib.jr_link_cert_name(cert, len(cert), buf, len(buf)), "certificate name")
    return buf.value.decode()


def to_text(data: bytes) -> str:
    """The text form (base64) of a key or certificate, for config files."""
    buf = _buf(_abi.CONSTANTS["JR_LINK_TEXT_MAX"])
    n = c_size_t()
    check(lib.jr_link_text_encode(data, len(data), buf, len(buf), byref(n)), "text encode")
    return buf.raw[: n.value].decode()


def from_text(text: str) -> bytes:
    raw = text.strip().encode()
    buf = _buf(_abi.CONSTANTS["JR_LINK_TEXT_MAX"])
    n = c_size_t()
    check(lib.jr_link_text_decode(raw, len(raw), buf, len(buf), byref(n)), "text decode")
    return buf.raw[: n.value]


class Link:
    """Both directions of one connection to a peer: the handshake, then sealed frames."""

    DIALER = 1
    ACCEPTOR = 2
    HANDSHAKE, OPEN, CLOSED, FAILED = 0, 1, 2, 3
    OVERHEAD = _abi.CONSTANTS["JR_LINK_FRAME_OVERHEAD"]

    def __init__(self, role: int, authority: Key, identity: Key, cert: bytes, cluster: str,
                 expect_name: Optional[str] = None, max_frame: int = 0) -> None:
        self._h: Optional[int] = None  # set once jr_link_new made it (close() may run before)
        cfg = _abi.jr_link_config()
        lib.jr_link_config_init_size(byref(cfg), ctypes.sizeof(cfg))
        self._cert = ctypes.create_string_buffer(cert, len(cert))  # kept while the link lives
        self._cluster = cluster.encode()
        self._expect = expect_name.encode() if expect_name is not None else None
        self._keys = (authority, identity)  # the C link reads them only in jr_link_new
        cfg.role = role
        cfg.authority = authority._handle()
        cfg.identity = identity._handle()
        cfg.cert = ctypes.cast(self._cert, c_void_p)
        cfg.cert_len = len(cert)
        cfg.cluster = self._cluster
        cfg.expect_name = self._expect
        if max_frame:
            cfg.max_frame = max_frame
        out = c_void_p()
        check(lib.jr_link_new(byref(cfg), byref(out)), "link")
        self._h = out.value
        self._seal_buf = _buf(0)

    def _handle(self) -> int:
        if not self._h:
            raise JetraftError.from_code(-20, "link is closed")  # JR_EMISUSE
        return self._h

    def _check(self, rc: int) -> int:
        if rc < 0:
            raise JetraftError.from_code(rc, self.errmsg)
        return rc

    def feed(self, data: bytes) -> tuple[int, Optional[bytes]]:
        """Feeds bytes read from the connection; returns how many were used (up to the end of
        one record: call again with the rest) and the frame that record held, if any."""
        used = c_size_t()
        frame = c_void_p()
        flen = c_size_t()
        self._check(lib.jr_link_feed(self._handle(), data, len(data), byref(used), byref(frame),
                                     byref(flen)))
        got = ctypes.string_at(frame.value, flen.value) if frame.value else None
        return used.value, got

    def feed_all(self, data: bytes) -> list[bytes]:
        """Feeds every byte of data; returns the frames they completed, in order. Stops after
        the record that ends the peer's stream (state CLOSED): nothing follows it."""
        frames = []
        n = len(data)
        buf = ctypes.create_string_buffer(data, n)  # one copy; each record fed in place
        base = ctypes.addressof(buf)
        h = self._handle()
        used = c_size_t()
        frame = c_void_p()
        flen = c_size_t()
        off = 0
        while off < n:
            self._check(lib.jr_link_feed(h, c_void_p(base + off), n - off, byref(used),
                                         byref(frame), byref(flen)))
            off += used.value
            if frame.value:
                frames.append(ctypes.string_at(frame.value, flen.value))
            if used.value == 0 or lib.jr_link_state(h) == self.CLOSED:
                break
        return frames

    def pending_out(self) -> bytes:
        """Handshake bytes to write, now marked written."""
        data = c_void_p()
        n = c_size_t()
        lib.jr_link_pending_out(self._handle(), byref(data), byref(n))
        out = ctypes.string_at(data.value, n.value) if n.value else b""
        if out:
            self._check(lib.jr_link_out_done(self._handle(), len(out)))
        return out

    def seal(self, frame: bytes) -> bytes:
        """The record to write for one frame (the link must be OPEN)."""
        need = len(frame) + self.OVERHEAD
        if len(self._seal_buf) < need:
            self._seal_buf = _buf(need)
        src = ctypes.create_string_buffer(frame, len(frame))
        iov = _abi.jr_iovec(ctypes.cast(src, c_void_p), len(frame))
        n = c_size_t()
        self._check(lib.jr_link_seal(self._handle(), byref(iov), 1, self._seal_buf,
                                     len(self._seal_buf), byref(n)))
        return self._seal_buf.raw[: n.value]

    def seal_final(self) -> bytes:
        """The record that ends this side's stream."""
        buf = _buf(self.OVERHEAD)
        n = c_size_t()
        self._check(lib.jr_link_seal_final(self._handle(), buf, len(buf), byref(n)))
        return buf.raw[: n.value]

    def eof(self) -> None:
        """The connection's input ended: raises CorruptError unless the peer ended cleanly."""
        self._check(lib.jr_link_eof(self._handle()))

    @property
    def state(self) -> int:
        return int(lib.jr_link_state(self._handle()))

    @property
    def peer_name(self) -> Optional[str]:
        """The peer's proven server name (the `from` of its frames), once the link is open."""
        name = lib.jr_link_peer_name(self._handle())
        return name.decode() if name else None

    @property
    def errmsg(self) -> str:
        return lib.jr_link_errmsg(self._h).decode() if self._h else "link is closed"

    def close(self) -> None:
        if self._h:
            lib.jr_link_free(self._h)
            self._h = None

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> "Link":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Key", "Link", "sign_cert", "check_cert", "cert_name", "to_text", "from_text"]

