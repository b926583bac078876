"""A mixed cluster over TCP on loopback: two jetraft-server processes (n1, n3) and one Python
process (n2, `python3 -m jetraft.server`), all three configured by jetraft-server's JSON format
with secure peer links and keys made by jetraft-server's key tool. n1 dials n2 and n3, n2 dials
n3, so the Python server both accepts and dials.

ORDERS R3 is created through a NATS client request to n1; messages are published through n1 and
n3 (NATS, with Nats-Msg-Id, retried until acknowledged) and through n2 (its control port, also
with a message id). Each process in turn is killed with SIGKILL while publishes go on through
the other two, then started again and published through. At the end every replica is current,
and each server in turn is made the stream leader and read back: every acknowledged message is
at its acknowledged sequence there, and the stream holds exactly the acknowledged messages.

MixedPlainClusterTest runs the same over the plain wire ("insecure_cluster": true), and
MixedTwoPythonTest with two Python processes (n2, n3: a Python server dials another).

Needs the jetraft-server binary ($JETRAFT_SERVER, set by meson when it is built); skipped
otherwise. Every process started is killed at the end, whatever happens.
"""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
from typing import Any, Callable, Optional

SERVER = os.path.abspath(os.environ["JETRAFT_SERVER"]) if os.environ.get("JETRAFT_SERVER") else ""
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = ["n1", "n2", "n3"]
STREAM = "ORDERS"
SETTLE = 90.0  # bound of each wait for the cluster (seconds)


def free_ports(n: int) -> list[int]:
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class Nats:
    """A minimal NATS client over a raw socket: CONNECT, SUB to an inbox, requests (PUB or
    HPUB with a reply subject) answered on it."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""
        info = self._line()
        if not info.startswith(b"INFO "):
            raise OSError(f"not a NATS server: {info[:40]!r}")
        self.sock.sendall(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,'
                          b'"no_responders":true}\r\nPING\r\n')
        while self._line() != b"PONG":
            pass
        self.inbox = f"_INBOX.{random.getrandbits(48):x}"
        self.sock.sendall(f"SUB {self.inbox}.* 1\r\n".encode())
        self.n = 0

    def close(self) -> None:
        self.sock.close()

    def _fill(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no reply")
        self.sock.settimeout(left)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise TimeoutError("no reply") from None
        if not data:
            raise ConnectionError("server closed the connection")
        self.buf += data

    def _line(self, deadline: Optional[float] = None) -> bytes:
        deadline = deadline or time.monotonic() + 5
        while b"\r\n" not in self.buf:
            self._fill(deadline)
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _take(self, n: int, deadline: float) -> bytes:
        while len(self.buf) < n + 2:
            self._fill(deadline)
        out, self.buf = self.buf[:n], self.buf[n + 2:]
        return out

    def request(self, subject: str, payload: bytes = b"", headers: Optional[dict] = None,
                timeout: float = 5.0) -> tuple[str, bytes]:
        """Returns the reply's header block ("" if none) and payload; TimeoutError if none."""
        self.n += 1
        reply = f"{self.inbox}.{self.n}"
        if headers:
            hb = ("NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                  + "\r\n").encode()
            self.sock.sendall(f"HPUB {subject} {reply} {len(hb)} {len(hb) + len(payload)}\r\n"
                              .encode() + hb + payload + b"\r\n")
        else:
            self.sock.sendall(f"PUB {subject} {reply} {len(payload)}\r\n".encode() + payload
                              + b"\r\n")
        deadline = time.monotonic() + timeout
        while True:
            line = self._line(deadline)
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
                continue
            parts = line.split()
            if not parts or parts[0] in (b"PONG", b"+OK"):
                continue
            if parts[0] == b"-ERR":
                raise ConnectionError(line.decode())
            if parts[0] == b"MSG":
                body = self._take(int(parts[-1]), deadline)
                hdr = b""
            elif parts[0] == b"HMSG":
                hlen, tlen = int(parts[-2]), int(parts[-1])
                both = self._take(tlen, deadline)
                hdr, body = both[:hlen], both[hlen:]
            else:
                raise ConnectionError(f"unexpected {line[:60]!r}")
            if parts[1].decode() == reply:
                return hdr.decode(), body

    def api(self, subject: str, req: Any = None, timeout: float = 5.0) -> dict:
        """A JetStream API request; the decoded JSON answer (ValueError for a status reply)."""
        hdr, body = self.request(subject, json.dumps(req).encode() if req is not None else b"",
                                 timeout=timeout)
        if not body:
            raise ValueError(f"status reply {hdr.splitlines()[0] if hdr else ''!r}")
        return json.loads(body)


class Control:
    """The Python server's control port: one JSON object per line each way."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.sock.makefile("rwb")

    def call(self, op: str, **kw: Any) -> dict:
        self.f.write(json.dumps({"op": op, **kw}).encode() + b"\n")
        self.f.flush()
        line = self.f.readline()
        if not line:
            raise ConnectionError("control port closed")
        return json.loads(line)

    def close(self) -> None:
        self.f.close()
        self.sock.close()


@unittest.skipUnless(SERVER and os.access(SERVER, os.X_OK), "needs $JETRAFT_SERVER")
class MixedClusterTest(unittest.TestCase):
    secure = True  # keys from the key tool; False: "insecure_cluster" (the plain wire)
    python = ["n2"]  # the Python processes; the others are jetraft-server (n1 is one)

    def setUp(self) -> None:
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.tmp = tempfile.TemporaryDirectory(prefix="jr-mixed-", dir=shm)
        self.dir = self.tmp.name
        self.procs: dict[str, subprocess.Popen] = {}
        self.logs: dict[str, str] = {}
        self.clients: dict[str, Any] = {}
        self.addCleanup(self.cleanup)
        ports = free_ports(12)
        self.cport = dict(zip(NAMES, ports[0:3]))
        self.lport = dict(zip(NAMES, ports[3:6]))
        self.control_port = dict(zip(NAMES, ports[6:9]))
        self.hport = dict(zip(NAMES, ports[9:12]))
        if self.secure:
            self.make_keys()
        for n in NAMES:
            self.write_config(n)
        self.acked: dict[str, tuple[int, bytes]] = {}  # msg id -> (seq, data)

    def cleanup(self) -> None:
        for c in self.clients.values():
            try:
                c.close()
            except OSError:
                pass
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
            p.wait()
        if sys.exc_info()[0] is not None or os.environ.get("JR_MIXED_LOGS"):
            self.dump_logs()
        self.tmp.cleanup()

    def dump_logs(self) -> None:
        for n, path in self.logs.items():
            try:
                with open(path, errors="replace") as f:
                    tail = f.readlines()[-40:]
            except OSError:
                continue
            sys.stderr.write(f"--- {n} log tail ---\n" + "".join(tail))

    # --- setup ---------------------------------------------------------------------------

    def tool(self, *args: str) -> None:
        subprocess.run([SERVER, *args], cwd=self.dir, check=True, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def make_keys(self) -> None:
        self.tool("--keygen", "authority", "auth")
        for n in NAMES:
            self.tool("--keygen", "identity", n)
            self.tool("--sign", "--authority", "auth.key", "--identity", f"{n}.pub",
                      "--cluster", "C1", "--name", n, "--out", f"{n}.cert")

    def write_config(self, n: str) -> None:
        cfg = {
            "name": n,
            "cluster": "C1",
            "tags": [f"az:{n[1]}"],
            "listen": f"127.0.0.1:{self.cport[n]}",
            "http_listen": f"127.0.0.1:{self.hport[n]}",
            "cluster_listen": f"127.0.0.1:{self.lport[n]}",
            "peers": {m: f"127.0.0.1:{self.lport[m]}" for m in NAMES},
            "wal_dir": f"{n}/wal",
            "store_dir": f"{n}/store",
        }
        if self.secure:
            cfg.update({"authority": "auth.pub", "identity": f"{n}.key",
                        "certificate": f"{n}.cert"})
        else:
            cfg["insecure_cluster"] = True
        with open(os.path.join(self.dir, f"{n}.json"), "w") as f:
            json.dump(cfg, f)

    def start(self, n: str) -> None:
        cfg = os.path.join(self.dir, f"{n}.json")
        if n in self.python:
            cmd = [sys.executable, "-m", "jetraft.server", "-c", cfg,
                   "--control", f"127.0.0.1:{self.control_port[n]}"]
        else:
            cmd = [SERVER, "-c", cfg]
        self.logs[n] = os.path.join(self.dir, f"{n}.log")
        log = open(self.logs[n], "ab")
        env = dict(os.environ, PYTHONPATH=PACKAGE_DIR)
        if env.get("JETRAFT_LIB"):
            env["JETRAFT_LIB"] = os.path.abspath(env["JETRAFT_LIB"])
        self.procs[n] = subprocess.Popen(cmd, stdout=log, stderr=log, cwd=self.dir, env=env)
        log.close()
        port = self.control_port[n] if n in self.python else self.cport[n]
        deadline = time.monotonic() + 30
        while True:
            if self.procs[n].poll() is not None:
                self.dump_logs()
                self.fail(f"{n} exited with status {self.procs[n].returncode}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.fail(f"{n} did not start listening")
                time.sleep(0.05)

    def kill(self, n: str) -> None:
        self.procs[n].send_signal(signal.SIGKILL)
        self.procs[n].wait()
        c = self.clients.pop(n, None)
        if c is not None:
            c.close()

    # --- requests, retried until they settle ------------------------------------------------

    def client(self, n: str) -> Any:
        c = self.clients.get(n)
        if c is None:
            c = Control(self.control_port[n]) if n in self.python else Nats(self.cport[n])
            self.clients[n] = c
        return c

    def retry(self, n: str, what: str, fn: Callable[[Any], Optional[Any]]) -> Any:
        """Calls fn(client of n) until it returns something other than None, reconnecting after
        connection errors; fails after SETTLE seconds."""
        deadline = time.monotonic() + SETTLE
        last: Any = None
        while time.monotonic() < deadline:
            try:
                out = fn(self.client(n))
                if out is not None:
                    return out
            except (OSError, ConnectionError, TimeoutError, ValueError) as e:
                last = e
                c = self.clients.pop(n, None)
                if c is not None:
                    c.close()
            time.sleep(0.1)
        self.dump_logs()
        self.fail(f"{what} through {n} did not settle within {SETTLE} s (last: {last!r})")

    def publish(self, n: str, msg_id: str) -> None:
        """Publishes one message through server n, retried with the same Nats-Msg-Id until it
        is acknowledged; records its sequence."""
        data = f"payload of {msg_id}".encode()
        subject = f"orders.{msg_id}"

        def once(c: Any) -> Optional[int]:
            if n in self.python:
                r = c.call("publish", subject=subject, data=data.decode(), msg_id=msg_id)
            else:
                hdr, body = c.request(subject, data, {"Nats-Msg-Id": msg_id})
                r = json.loads(body) if body else {"error": hdr}
            return None if "error" in r else int(r["seq"])

        seq = self.retry(n, f"publish {msg_id}", once)
        self.acked[msg_id] = (seq, data)

    def publish_some(self, through: list[str], count: int, tag: str) -> None:
        for i in range(count):
            n = through[i % len(through)]
            self.publish(n, f"{tag}-{n}-{i}")

    def info(self, n: str = "n1") -> dict:
        def once(c: Any) -> Optional[dict]:
            r = c.api(f"$JS.API.STREAM.INFO.{STREAM}")
            return None if "error" in r else r

        return self.retry(n, "stream info", once)

    def wait_current(self) -> None:
        """Until the stream has a leader, every replica is current with no lag and the stream
        holds exactly the acknowledged messages."""
        want = len(self.acked)

        def once(c: Any) -> Optional[bool]:
            r = c.api(f"$JS.API.STREAM.INFO.{STREAM}")
            cl = r.get("cluster", {})
            reps = cl.get("replicas", [])
            ok = (cl.get("leader") and len(reps) == 2
                  and all(p.get("current") and not p.get("lag") for p in reps)
                  and r["state"]["messages"] == want)
            return True if ok else None

        self.retry("n1", "replicas current", once)

    def wait_healthy(self) -> None:
        """Until every server reports itself healthy: jetraft-server's /healthz answers 200, a
        Python server's health says so. After a restart that means its replicas vote again
        (vouched for, its meta state applied up to where it was), which is what an operator
        waits for before taking down the next server: a replica that stream info already shows
        current may not vote yet, and the loss of one more server would leave its group without
        a quorum until the lost one came back."""
        for n in NAMES:
            if n in self.python:
                self.retry(n, "healthy",
                           lambda c: True if c.call("health").get("healthy") else None)
                continue

            def once(c: Any) -> Optional[bool]:
                try:
                    with urllib.request.urlopen(
                            f"http://127.0.0.1:{self.hport[n]}/healthz", timeout=5) as r:
                        return True if r.status == 200 else None
                except urllib.error.HTTPError:
                    return None  # 503: not healthy yet

            self.retry(n, "healthy", once)

    def lead(self, n: str) -> None:
        """Moves the stream's leadership to n and waits until n reports it leads."""

        def once(c: Any) -> Optional[bool]:
            if self.info()["cluster"].get("leader") == n:
                return True
            c.api(f"$JS.API.STREAM.LEADER.STEPDOWN.{STREAM}", {"placement": {"preferred": n}})
            time.sleep(0.5)
            return None

        self.retry("n1", f"stepdown to {n}", once)
        if n in self.python:
            self.retry(n, "python sees itself lead",
                       lambda c: True if c.call("stream_info", stream=STREAM).get("leader") == n
                       else None)

    def read_all(self, n: str) -> None:
        """Reads every acknowledged message through server n (its leader: n itself)."""
        for msg_id, (seq, data) in sorted(self.acked.items(), key=lambda kv: kv[1][0]):
            def once(c: Any) -> Optional[tuple[str, bytes]]:
                if n in self.python:
                    r = c.call("msg_get", stream=STREAM, seq=seq)
                    if "error" in r:
                        return None
                    return r["subject"], base64.b64decode(r["data_b64"])
                r = c.api(f"$JS.API.STREAM.MSG.GET.{STREAM}", {"seq": seq})
                if "error" in r:
                    return None
                return r["message"]["subject"], base64.b64decode(r["message"].get("data", ""))

            subject, got = self.retry(n, f"msg get {seq}", once)
            self.assertEqual((subject, got), (f"orders.{msg_id}", data),
                             f"seq {seq} on {n}")

    # --- the test ------------------------------------------------------------------------

    def test_mixed_cluster_survives_the_loss_of_any_one(self) -> None:
        for n in NAMES:
            self.start(n)
        create = {"name": STREAM, "subjects": ["orders.>"], "num_replicas": 3,
                  "allow_direct": True}

        def created(c: Nats) -> Optional[dict]:
            r = c.api(f"$JS.API.STREAM.CREATE.{STREAM}", create)
            return None if "error" in r else r

        r = self.retry("n1", "stream create", created)
        self.assertEqual(r["config"]["num_replicas"], 3)
        # the Python server sees the stream and its three replicas, once it has a leader
        py_info = self.retry(self.python[0], "stream info on a Python server",
                             lambda c: x if (x := c.call("stream_info", stream=STREAM)).get(
                                 "leader") else None)
        self.assertEqual(sorted([py_info["leader"]] + [r["name"] for r in py_info["replicas"]]),
                         NAMES)

        self.publish_some(NAMES, 30, "first")
        for victim in [self.python[0]] + [n for n in NAMES if n != self.python[0]]:
            self.kill(victim)
            survivors = [n for n in NAMES if n != victim]
            self.publish_some(survivors, 20, f"without-{victim}")
            self.start(victim)
            self.publish_some([victim], 10, f"after-{victim}")
            # The loss of one: the restarted replica votes only once its leader vouched for it
            # (restarted from disk, it may have lost what it acknowledged) and its meta state is
            # applied up to where it was; publishes through it are served by the leader before
            # that. Killing the next server earlier would be the loss of two: the survivors
            # could elect nobody until it came back.
            self.wait_current()
            self.wait_healthy()

        # distinct messages, distinct sequences
        seqs = [s for s, _ in self.acked.values()]
        self.assertEqual(len(set(seqs)), len(seqs))
        self.wait_current()
        info = self.info()
        self.assertEqual(info["state"]["messages"], len(self.acked))
        self.assertEqual(info["state"]["last_seq"], max(seqs))
        for n in NAMES:
            self.lead(n)
            self.read_all(n)
        # the Python server's own view agrees (once the last leader heard from every replica)
        def py_view(c: Control) -> Optional[dict]:
            r = c.call("stream_info", stream=STREAM)
            ok = "error" not in r and all(p["current"] for p in r["replicas"])
            return r if ok else None

        for n in self.python:
            py = self.retry(n, "stream info on a Python server", py_view)
            self.assertEqual((py["msgs"], py["last_seq"]), (len(self.acked), max(seqs)))
            # the servers' route frames are skipped, not fed to the node and rejected
            links = self.retry(n, "links", lambda c: c.call("links"))
            self.assertEqual(links["frames_rejected"], 0, f"{n}'s rejected frames")

        # SIGTERM: each process closes its node and links and exits 0
        for n in NAMES:
            self.procs[n].send_signal(signal.SIGTERM)
        for n in NAMES:
            self.assertEqual(self.procs[n].wait(timeout=30), 0, f"{n} after SIGTERM")
        for n in self.python:
            with open(self.logs[n], errors="replace") as f:
                self.assertNotIn("Traceback", f.read(), f"{n}'s log")  # nothing raised


class MixedPlainClusterTest(MixedClusterTest):
    """The same over jetraft-server's plain wire ("insecure_cluster")."""

    secure = False


class MixedTwoPythonTest(MixedClusterTest):
    """Two Python processes (n2 dials n3, both accept n1) and one jetraft-server, secure."""

    python = ["n2", "n3"]


if __name__ == "__main__":
    unittest.main()
