"""Secure links from Python: keys and certificates round-trip in bytes and text, a dialer and an
acceptor open a link over an in-memory byte pipe (fed in small pieces), frames cross it both
ways, and a forged certificate, another cluster or a tampered record is refused."""

from __future__ import annotations

import unittest

from jetraft import AuthError, CorruptError, InvalidArgumentError, JetraftError
from jetraft.link import Key, Link, cert_name, check_cert, from_text, sign_cert, to_text


def pump(a: Link, b: Link, chunk: int = 7) -> list[bytes]:
    """Moves a's pending handshake bytes into b, `chunk` bytes at a time; b's frames."""
    data = a.pending_out()
    frames = []
    for i in range(0, len(data), chunk):
        frames += b.feed_all(data[i:i + chunk])
    return frames


class LinkTest(unittest.TestCase):
    def setUp(self) -> None:
        self.authority = Key.generate(Key.AUTHORITY)
        self.pub = self.authority.public_key()
        self.ids = {n: Key.generate(Key.IDENTITY) for n in ("n1", "n2")}
        self.certs = {n: sign_cert(self.authority, k, "east", n) for n, k in self.ids.items()}

    def pair(self, acceptor_cert: bytes | None = None) -> tuple[Link, Link]:
        dialer = Link(Link.DIALER, self.pub, self.ids["n1"], self.certs["n1"], "east",
                      expect_name="n2")
        acceptor = Link(Link.ACCEPTOR, self.pub, self.ids["n2"],
                        acceptor_cert or self.certs["n2"], "east")
        return dialer, acceptor

    def test_keys_and_certificates(self) -> None:
        self.assertEqual(self.authority.role, Key.AUTHORITY)
        self.assertTrue(self.authority.has_secret)
        self.assertFalse(self.pub.has_secret)
        self.assertEqual(self.pub.public, self.authority.public)
        again = Key.from_text(self.authority.to_text(secret=True))
        self.assertEqual(again.public, self.authority.public)
        self.assertTrue(again.has_secret)
        cert = self.certs["n1"]
        self.assertEqual(from_text(to_text(cert)), cert)
        self.assertEqual(cert_name(cert), "n1")
        check_cert(cert, self.pub, "east", "n1")
        with self.assertRaises(AuthError):
            check_cert(cert, self.pub, "west")
        with self.assertRaises(AuthError):
            check_cert(cert, self.pub, "east", "n2")
        with self.assertRaises(AuthError):
            check_cert(cert, Key.generate(Key.AUTHORITY), "east")
        with self.assertRaises(InvalidArgumentError):  # a public key cannot sign
            sign_cert(self.pub, self.ids["n1"], "east", "n1")
        bad = bytearray(cert)
        bad[-1] ^= 1
        with self.assertRaises(JetraftError):
            check_cert(bytes(bad), self.pub, "east")
        self.pub.close()
        with self.assertRaises(JetraftError):
            self.pub.encode()

    def test_a_link_opens_and_carries_frames_both_ways(self) -> None:
        d, a = self.pair()
        self.assertEqual(d.state, Link.HANDSHAKE)
        self.assertIsNone(d.peer_name)
        for _ in range(3):  # HELLO each way, then AUTH each way
            pump(d, a)
            pump(a, d)
        self.assertEqual((d.state, a.state), (Link.OPEN, Link.OPEN))
        self.assertEqual((d.peer_name, a.peer_name), ("n2", "n1"))
        for size in (0, 1, 1000, 70000):
            frame = bytes(i % 251 for i in range(size))
            record = d.seal(frame)
            self.assertEqual(len(record), size + Link.OVERHEAD)
            got = []
            for i in range(0, len(record), 4096):
                got += a.feed_all(record[i:i + 4096])
            self.assertEqual(got, [frame])
            self.assertEqual(d.feed_all(a.seal(frame)), [frame])
        self.assertEqual(a.feed_all(d.seal_final()), [])
        a.eof()
        self.assertEqual(a.state, Link.CLOSED)

    def test_refusals(self) -> None:
        # a certificate another authority signed: the acceptor cannot even start
        rogue = Key.generate(Key.AUTHORITY)
        with self.assertRaises(AuthError):
            self.pair(sign_cert(rogue, self.ids["n2"], "east", "n2"))
        # n1's certificate presented by n2's key: refused by jr_link_new
        with self.assertRaises(AuthError):
            self.pair(self.certs["n1"])
        # a tampered record fails the link, and the failure sticks
        d, a = self.pair()
        for _ in range(3):
            pump(d, a)
            pump(a, d)
        record = bytearray(d.seal(b"hello"))
        record[-1] ^= 0x40
        with self.assertRaises(AuthError):
            a.feed_all(bytes(record))
        self.assertEqual(a.state, Link.FAILED)
        self.assertNotEqual(a.errmsg, "")
        with self.assertRaises(JetraftError):
            a.feed_all(d.seal(b"again"))
        # a stream cut mid-record is not a clean end
        d, a = self.pair()
        for _ in range(3):
            pump(d, a)
            pump(a, d)
        a.feed_all(d.seal(b"x")[:5])
        with self.assertRaises(CorruptError):
            a.eof()


if __name__ == "__main__":
    unittest.main()
