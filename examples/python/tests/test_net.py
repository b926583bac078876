"""jetraft.net and jetraft.server in one process: three nodes on one asyncio loop joined by real
TCP peer links on loopback (secure, and plain), a node closed and opened again on the same WAL
(its peers redial it), the sessions' refusals, and the configuration reader.

The mixed cluster with jetraft-server processes is test_mixed.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import tempfile
import unittest
from typing import Optional

from jetraft import NodeConfig, StreamConfig, open_node
from jetraft.link import Key, sign_cert, to_text
from jetraft.net import LinkKeys, LinkRefused, PeerHost, PlainSession, SecureSession
from jetraft.server import load_config, main, parse_config

NAMES = ["a", "b", "c"]


def free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    out = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return out


class ClusterOverTcp(unittest.IsolatedAsyncioTestCase):
    secure = True

    async def asyncSetUp(self) -> None:
        asyncio.get_running_loop().slow_callback_duration = 10.0  # a WAL fsync is not a bug
        self.dir = tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm")
                                               else None)
        ports = free_ports(3)
        self.addrs = {n: ("127.0.0.1", p) for n, p in zip(NAMES, ports)}
        self.keys: dict[str, Optional[LinkKeys]] = {n: None for n in NAMES}
        if self.secure:
            auth = Key.generate(Key.AUTHORITY)
            for n in NAMES:
                ident = Key.generate(Key.IDENTITY)
                self.keys[n] = LinkKeys(auth.public_key(), ident,
                                        sign_cert(auth, ident, "T", n))
        self.logs: list[str] = []
        self.hosts: dict[str, PeerHost] = {}
        for n in NAMES:
            await self.open(n)

    async def asyncTearDown(self) -> None:
        for h in self.hosts.values():
            await h.close()
        self.dir.cleanup()

    async def open(self, n: str) -> None:
        host = PeerHost(n, "T", self.addrs, self.addrs[n], keys=self.keys[n],
                        log=self.logs.append)
        cfg = NodeConfig(streams=True, cluster="T")
        host.attach(open_node(n, host.peer_names, f"{self.dir.name}/{n}", host, cfg))
        await host.start()
        self.hosts[n] = host

    async def until(self, what: str, cond, timeout: float = 30) -> None:  # type: ignore
        deadline = asyncio.get_running_loop().time() + timeout
        while not cond():
            if asyncio.get_running_loop().time() > deadline:
                self.fail(f"{what}: not within {timeout} s; log: {self.logs[-20:]}")
            await asyncio.sleep(0.02)

    async def publish(self, node, subject: str, data: bytes, msg_id: str):  # type: ignore
        for _ in range(20):  # a leader change may leave one open: asked again, deduplicated
            try:
                return await asyncio.wait_for(node.publish(subject, data, msg_id=msg_id), 10)
            except Exception:  # noqa: BLE001 - timeouts and leader changes alike
                await asyncio.sleep(0.2)
        self.fail(f"publish {msg_id} never acknowledged")

    async def test_links_come_up_carry_a_stream_and_come_back(self) -> None:
        await self.until("links up", lambda: all(
            len(h.connected()) == 2 for h in self.hosts.values()))
        # a dials b and c, b dials c: every pair has one connection, made by the smaller name
        self.assertEqual(sorted(self.hosts["a"].connected()), ["b", "c"])
        a = self.hosts["a"].node
        assert a is not None
        for _ in range(100):
            try:
                await asyncio.wait_for(a.stream_add(StreamConfig(
                    name="ORDERS", subjects=["orders.>"], replicas=3)), 10)
                break
            except Exception:  # noqa: BLE001 - no meta leader yet
                await asyncio.sleep(0.2)
        acks = [await self.publish(a, f"orders.{i}", b"o%d" % i, f"m{i}") for i in range(20)]
        self.assertEqual([x.seq for x in acks], list(range(1, 21)))
        self.assertGreater(self.hosts["a"].stats().frames_sent, 0)
        self.assertGreater(self.hosts["c"].stats().frames_received, 0)

        # c closes (its links go down) and opens again on its WAL: a and b redial it
        await self.hosts.pop("c").close()
        await self.until("links to c down", lambda: "c" not in self.hosts["a"].connected())
        more = [await self.publish(a, f"orders.{i}", b"o%d" % i, f"m{i}") for i in range(20, 30)]
        await self.open("c")
        await self.until("links to c back", lambda: len(self.hosts["c"].connected()) == 2)
        c = self.hosts["c"].node
        assert c is not None
        last = more[-1].seq
        for _ in range(200):
            info = await asyncio.wait_for(c.stream_info("ORDERS"), 10)
            if info.state.last_seq == last and all(r.current for r in info.cluster.replicas):
                break
            await asyncio.sleep(0.1)
        self.assertEqual(info.state.msgs, 30)
        got = await asyncio.wait_for(c.msg_get("ORDERS", 25), 10)
        self.assertEqual(got.data, b"o24")


class PlainClusterOverTcp(ClusterOverTcp):
    secure = False


class Sessions(unittest.TestCase):
    def test_plain_handshake_and_refusals(self) -> None:
        a = PlainSession("T", "a", "b", 1 << 20)  # a dials b
        b = PlainSession("T", "b", None, 1 << 20)
        self.assertEqual(b.feed(a.pending_out()), [])
        self.assertEqual(a.feed(b.pending_out()), [])
        self.assertEqual((a.peer_name, b.peer_name), ("b", "a"))
        rec = a.seal(b"frame")
        self.assertEqual(b.feed(rec[:3]) + b.feed(rec[3:]), [b"frame"])
        with self.assertRaisesRegex(LinkRefused, "another cluster"):
            PlainSession("T", "a", None, 64).feed(PlainSession("U", "b", None, 64).pending_out())
        with self.assertRaisesRegex(LinkRefused, "not the server dialled"):
            PlainSession("T", "a", "b", 64).feed(PlainSession("T", "c", None, 64).pending_out())
        with self.assertRaisesRegex(LinkRefused, "bad frame length"):
            PlainSession("T", "a", None, 64).feed(b"\x00\x00\x01\x00")

    def test_secure_handshake_and_refusals(self) -> None:
        auth = Key.generate(Key.AUTHORITY)
        ids = {n: Key.generate(Key.IDENTITY) for n in "abc"}
        keys = {n: LinkKeys(auth.public_key(), k, sign_cert(auth, k, "T", n))
                for n, k in ids.items()}
        a = SecureSession(keys["a"], "T", "b", 1 << 20)
        b = SecureSession(keys["b"], "T", None, 1 << 20)
        for _ in range(3):
            b.feed(a.pending_out())
            a.feed(b.pending_out())
        self.assertEqual((a.peer_name, b.peer_name), ("b", "a"))
        self.assertEqual(b.feed(a.seal(b"x" * 1000)), [b"x" * 1000])
        # a dials b, c answers
        a2 = SecureSession(keys["a"], "T", "b", 1 << 20)
        c = SecureSession(keys["c"], "T", None, 1 << 20)
        with self.assertRaises(LinkRefused):
            for _ in range(3):
                c.feed(a2.pending_out())
                a2.feed(c.pending_out())


class Config(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        auth = Key.generate(Key.AUTHORITY)
        ident = Key.generate(Key.IDENTITY)
        files = {"auth.pub": to_text(auth.encode()), "n1.key": to_text(ident.encode(True)),
                 "n1.cert": to_text(sign_cert(auth, ident, "C1", "n1")),
                 "n2.cert": to_text(sign_cert(auth, ident, "C1", "n2"))}
        for f, text in files.items():
            with open(os.path.join(self.tmp.name, f), "w") as fh:
                fh.write(text + "\n")
        self.base = {
            "name": "n1", "cluster": "C1", "tags": ["az:1"], "listen": "127.0.0.1:4222",
            "cluster_listen": "127.0.0.1:6222", "http_listen": "127.0.0.1:8222",
            "peers": {"n1": "127.0.0.1:6222", "n2": "127.0.0.1:6223"},
            "wal_dir": "n1/wal", "authority": "auth.pub", "identity": "n1.key",
            "certificate": "n1.cert", "sync": "always", "election_timeout_ms": 800,
            "users": [{"user": "app", "password": "$argon2id$..."}],
        }

    def load(self, **kw) -> object:  # type: ignore[no-untyped-def]
        path = os.path.join(self.tmp.name, "n1.json")
        with open(path, "w") as f:
            json.dump({**self.base, **kw}, f)
        return load_config(path)

    def test_jetraft_server_files_load(self) -> None:
        cfg = self.load()
        self.assertEqual(cfg.name, "n1")
        self.assertEqual(cfg.peers["n2"], ("127.0.0.1", 6223))
        self.assertEqual(cfg.wal_dir, os.path.join(self.tmp.name, "n1/wal"))  # relative: file's
        self.assertIsNotNone(cfg.keys)
        nc = cfg.node_config()
        self.assertEqual((nc.cluster, nc.tags, nc.election_timeout_ms), ("C1", ["az:1"], 800))
        self.assertEqual(nc.store_dir, cfg.wal_dir)

    def test_errors_name_the_field(self) -> None:
        for kw, why in [
            ({"bogus": 1}, "bogus: unknown field"),
            ({"sync": "never"}, "sync: must be"),
            ({"certificate": "n2.cert"}, 'issued to "n2"'),
            ({"cluster": "C2"}, "not signed by this authority"),
            ({"heartbeat_ms": 900}, "heartbeat_ms: must be below"),
            ({"peers": {"n2": "127.0.0.1:1"}}, "must list this server"),
            ({"cluster_listen": "nowhere"}, "cluster_listen: must be"),
            ({"insecure_cluster": True}, "cannot be combined"),
        ]:
            with self.assertRaisesRegex(ValueError, why, msg=str(kw)):
                self.load(**kw)
        with self.assertRaisesRegex(ValueError, "wal_dir: required"):
            parse_config({k: v for k, v in self.base.items() if k != "wal_dir"}, self.tmp.name)
        plain = {k: v for k, v in self.base.items()
                 if k not in ("authority", "identity", "certificate")}
        self.assertIsNone(parse_config({**plain, "insecure_cluster": True}, self.tmp.name).keys)
        with self.assertRaisesRegex(ValueError, "authority: required"):
            parse_config(plain, self.tmp.name)

    def test_the_command_refuses_before_it_starts(self) -> None:
        import contextlib
        import io

        self.load()
        path = os.path.join(self.tmp.name, "n1.json")
        for argv, why in [(["-c", path, "--control", "0.0.0.0:7000"], "loopback"),
                          (["-c", path + ".missing"], "No such file")]:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                self.assertEqual(main(argv), 1)
            self.assertIn(why, err.getvalue())


if __name__ == "__main__":
    unittest.main()
