"""A cluster server in Python: one node per process on asyncio with TCP peer links
(jetraft.net.PeerHost), configured by jetraft-server's own JSON file, so that Python processes
and jetraft-server processes make one cluster.

    python3 -m jetraft.server -c n2.json [--control 127.0.0.1:7223]

It reads the fields of jetraft-server's configuration (examples/server/README.md,
"Configuration file") that concern the node and its peer links: name, cluster, tags,
cluster_listen, peers, wal_dir, store_dir, the key files (authority, identity, certificate) or
insecure_cluster, and the node's tuning fields. The client-side fields (listen, http_listen,
users, client and connection limits) are accepted and ignored: this server does not serve NATS
clients. An unknown field, a field of the wrong type or a missing required one is an error
naming it, and relative paths are taken from the file's directory, as jetraft-server does.

--control HOST:PORT opens a small request port on a loopback address (it is unauthenticated: for
tests and operators on the same host): one JSON object per line in, one per line out, e.g.
  {"op": "publish", "subject": "orders.1", "data": "hello", "msg_id": "o-1"}
  -> {"stream": "ORDERS", "seq": 7, "duplicate": false}
  {"op": "stream_info", "stream": "ORDERS"} -> {"msgs": ..., "leader": ..., "replicas": [...]}
  {"op": "msg_get", "stream": "ORDERS", "seq": 7} -> {"seq": 7, "subject": ..., "data_b64": ...}
  {"op": "health"} -> {"healthy": true, "meta_text": "", "groups": [...]}
  {"op": "links"} -> {"connected": [...], "frames_rejected": N, "route_frames_ignored": N}
and errors as {"error": "...", "code": -N, "name": "ENOTFOUND"}. Data is text (UTF-8) or, with
"data_b64", base64. See CONTROL_OPS for the operations.

SIGTERM or SIGINT closes the node (what is pending is written, synced and sent), then the links,
and exits 0. After SIGKILL a restart with the same wal_dir recovers everything acknowledged.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import ipaddress
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

from . import open_node
from .errors import JetraftError
from .net import LinkKeys, PeerHost
from .node import Node
from .types import NodeConfig, StreamConfig, SyncPolicy


@dataclass
class ServerConfig:
    """jetraft-server's configuration, the fields a node and its peer links use."""

    name: str
    cluster_listen: tuple[str, int]
    peers: dict[str, tuple[str, int]]
    wal_dir: str
    cluster: str = "jetraft"
    tags: list[str] = field(default_factory=list)
    store_dir: Optional[str] = None
    max_store_bytes: int = 0
    max_assets: int = 0
    unique_tag: Optional[str] = None
    sync: str = "always"
    sync_interval_ms: int = 100
    election_timeout_ms: int = 1000
    heartbeat_ms: int = 100
    request_timeout_ms: int = 4000
    max_payload: int = 1 << 20
    max_frame_bytes: int = 8 << 20
    peer_queue_bytes: int = 64 << 20
    insecure_cluster: bool = False
    keys: Optional[LinkKeys] = None

    def node_config(self) -> NodeConfig:
        return NodeConfig(
            cluster=self.cluster,
            tags=list(self.tags),
            store_dir=self.store_dir or self.wal_dir,
            election_timeout_ms=self.election_timeout_ms,
            heartbeat_ms=self.heartbeat_ms,
            sync_policy=SyncPolicy.INTERVAL if self.sync == "interval" else SyncPolicy.ALWAYS,
            sync_interval_ms=self.sync_interval_ms,
            max_frame_bytes=self.max_frame_bytes,
            unique_tag=self.unique_tag,
            max_store_bytes=self.max_store_bytes,
            max_assets=self.max_assets,
            streams=True,
            request_timeout_ms=self.request_timeout_ms,
            max_payload=self.max_payload,
        )


# field -> (kind, lower bound) of jetraft-server's numeric fields
_INTS = {
    "max_store_bytes": 0, "max_assets": 0, "sync_interval_ms": 1, "election_timeout_ms": 1,
    "heartbeat_ms": 1, "request_timeout_ms": 1, "max_payload": 1, "max_frame_bytes": 1,
    "peer_queue_bytes": 1,
}
# accepted for compatibility with jetraft-server's files; they concern NATS clients
_CLIENT_FIELDS = {"listen", "http_listen", "users", "client_max_pending", "max_control_line",
                  "max_connections", "max_inflight", "ping_interval_ms"}


def _hostport(field_name: str, v: Any) -> tuple[str, int]:
    if isinstance(v, str) and ":" in v:
        host, _, port = v.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if host and port.isdigit() and 0 < int(port) < 65536:
            return host, int(port)
    raise ValueError(f'{field_name}: must be "host:port"')


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_config(obj: Any, base_dir: str = ".") -> ServerConfig:
    """A ServerConfig from a parsed JSON object; ValueError names the field that is wrong."""
    if not isinstance(obj, dict):
        raise ValueError("the configuration must be a JSON object")
    kw: dict[str, Any] = {}
    files: dict[str, str] = {}

    def path(v: str) -> str:
        return v if os.path.isabs(v) else os.path.join(base_dir, v)

    for k, v in obj.items():
        if k in ("name", "cluster", "unique_tag"):
            if not isinstance(v, str) or not v:
                raise ValueError(f"{k}: must be a non-empty string")
            kw[k] = v
        elif k == "tags":
            if not isinstance(v, list) or not all(isinstance(t, str) for t in v):
                raise ValueError("tags: must be an array of strings")
            kw[k] = list(v)
        elif k == "cluster_listen":
            kw[k] = _hostport(k, v)
        elif k == "peers":
            if not isinstance(v, dict) or not v:
                raise ValueError('peers: must be an object of server name to "host:port"')
            kw[k] = {n: _hostport(f"peers.{n}", a) for n, a in v.items()}
        elif k in ("wal_dir", "store_dir"):
            if not isinstance(v, str) or not v:
                raise ValueError(f"{k}: must be a path")
            kw[k] = path(v)
        elif k in _INTS:
            if not isinstance(v, int) or isinstance(v, bool) or v < _INTS[k] or v >= 1 << 63:
                raise ValueError(f"{k}: must be an integer >= {_INTS[k]}")
            kw[k] = v
        elif k == "sync":
            if v not in ("always", "interval"):
                raise ValueError('sync: must be "always" or "interval"')
            kw[k] = v
        elif k == "insecure_cluster":
            if not isinstance(v, bool):
                raise ValueError("insecure_cluster: must be true or false")
            kw[k] = v
        elif k in ("authority", "identity", "certificate"):
            if not isinstance(v, str) or not v:
                raise ValueError(f"{k}: must be a path")
            files[k] = path(v)
        elif k in _CLIENT_FIELDS:
            continue
        else:
            raise ValueError(f"{k}: unknown field")
    for req in ("name", "cluster_listen", "peers", "wal_dir"):
        if req not in kw:
            raise ValueError(f"{req}: required")
    cfg = ServerConfig(**kw)
    if cfg.name not in cfg.peers:
        raise ValueError(f'peers: must list this server ("{cfg.name}")')
    if cfg.heartbeat_ms >= cfg.election_timeout_ms:
        raise ValueError(f"heartbeat_ms: must be below election_timeout_ms "
                         f"({cfg.election_timeout_ms})")
    if cfg.insecure_cluster:
        if files:
            raise ValueError("insecure_cluster: cannot be combined with authority, identity "
                             "and certificate")
        return cfg
    for req in ("authority", "identity", "certificate"):
        if req not in files:
            raise ValueError(f"{req}: required (peer links need authority, identity and "
                             f"certificate files; jetraft-server --keygen and --sign make them; "
                             f'or "insecure_cluster": true)')
    cfg.keys = LinkKeys.load(files["authority"], files["identity"], files["certificate"])
    cfg.keys.check(cfg.cluster, cfg.name)
    return cfg


def load_config(path: str) -> ServerConfig:
    """Reads jetraft-server's JSON configuration file; ValueError says what is wrong where."""
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f, object_pairs_hook=_no_duplicates)
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: line {e.lineno}, column {e.colno}: {e.msg}") from None
    try:
        return parse_config(obj, os.path.dirname(path) or ".")
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate object key {k!r}")
        out[k] = v
    return out


# --- the control port --------------------------------------------------------------------


def _data(req: dict[str, Any]) -> bytes:
    if "data_b64" in req:
        return base64.b64decode(req["data_b64"])
    return str(req.get("data", "")).encode()


async def _op_publish(node: Node, req: dict[str, Any]) -> dict[str, Any]:
    kw = {"msg_id": req["msg_id"]} if req.get("msg_id") else {}
    ack = await node.publish(req["subject"], _data(req), **kw)
    return {"stream": ack.stream, "seq": ack.seq, "duplicate": bool(ack.duplicate)}


async def _op_stream_add(node: Node, req: dict[str, Any]) -> dict[str, Any]:
    c = req["config"]
    await node.stream_add(StreamConfig(
        name=c["name"], subjects=list(c.get("subjects", [])), replicas=c.get("replicas", 1),
        allow_direct=bool(c.get("allow_direct", False))))
    return {}


async def _op_stream_info(node: Node, req: dict[str, Any]) -> dict[str, Any]:
    info = await node.stream_info(req["stream"])
    cl = info.cluster
    return {
        "msgs": info.state.msgs, "first_seq": info.state.first_seq,
        "last_seq": info.state.last_seq, "leader": cl.leader or "",
        "replicas": [{"name": r.name, "current": bool(r.current), "offline": bool(r.offline),
                      "lag": r.lag} for r in cl.replicas],
    }


def _msg(m: Any) -> dict[str, Any]:
    return {"seq": m.seq, "subject": m.subject, "data_b64": base64.b64encode(m.data).decode()}


async def _op_msg_get(node: Node, req: dict[str, Any]) -> dict[str, Any]:
    return _msg(await node.msg_get(req["stream"], int(req["seq"])))


async def _op_direct_get(node: Node, req: dict[str, Any]) -> dict[str, Any]:
    return _msg(await node.direct_get(req["stream"], int(req.get("seq", 0)),
                                      req.get("subject")))


async def _op_stream_stepdown(node: Node, req: dict[str, Any]) -> dict[str, Any]:
    await node.stream_stepdown(req["stream"], req.get("peer"))
    return {}


async def _op_meta_info(node: Node, req: dict[str, Any]) -> dict[str, Any]:
    m = await node.meta_info()
    return {"leader": m.leader or ""}


async def _op_health(node: Node, req: dict[str, Any]) -> dict[str, Any]:
    h = await node.health()
    return {"healthy": bool(h.healthy), "meta_text": h.meta_text,
            "groups": [g.text for g in h.groups]}


CONTROL_OPS = {
    "publish": _op_publish, "stream_add": _op_stream_add, "stream_info": _op_stream_info,
    "msg_get": _op_msg_get, "direct_get": _op_direct_get,
    "stream_stepdown": _op_stream_stepdown, "meta_info": _op_meta_info, "health": _op_health,
}


async def _control_conn(node: Node, host: PeerHost, reader: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> None:
    """Serves one control connection until it ends, or until the server stops (cancelled:
    the connection is closed and the task ends quietly)."""
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            try:
                req = json.loads(line)
                if req.get("op") == "links":
                    st = host.stats()
                    out: dict[str, Any] = {"connected": host.connected(),
                                           "frames_rejected": st.frames_rejected,
                                           "route_frames_ignored": st.route_frames_ignored}
                else:
                    out = await CONTROL_OPS[req["op"]](node, req)
            except JetraftError as e:
                out = {"error": e.message or e.strerror, "code": e.code, "name": e.name}
            except (KeyError, TypeError, ValueError) as e:
                out = {"error": f"bad request: {e!r}", "code": -22, "name": "EINVAL"}
            writer.write(json.dumps(out).encode() + b"\n")
            await writer.drain()
    except (ConnectionError, OSError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


# --- main --------------------------------------------------------------------------------


async def serve(cfg: ServerConfig, control: Optional[tuple[str, int]] = None) -> int:
    """Runs the server until SIGTERM or SIGINT; returns the exit status."""
    loop = asyncio.get_running_loop()
    host = PeerHost(cfg.name, cfg.cluster, cfg.peers, cfg.cluster_listen, keys=cfg.keys,
                    max_frame=cfg.max_frame_bytes, queue_bytes=cfg.peer_queue_bytes, loop=loop)
    os.makedirs(cfg.wal_dir, exist_ok=True)
    try:
        node = open_node(cfg.name, host.peer_names, cfg.wal_dir, host, cfg.node_config())
    except JetraftError as e:
        print(f"jetraft.server: {e}", file=sys.stderr)
        return 1
    host.attach(node)
    try:
        await host.start()
    except OSError as e:
        print(f"jetraft.server: cluster_listen {cfg.cluster_listen[0]}:{cfg.cluster_listen[1]}: "
              f"{e.strerror}", file=sys.stderr)
        await host.close()
        return 1
    ctl = None
    if control is not None:
        ctl = await asyncio.start_server(
            lambda r, w: _control_conn(node, host, r, w), control[0], control[1],
            reuse_address=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"[{cfg.name}] ready: cluster on {cfg.cluster_listen[0]}:{cfg.cluster_listen[1]} "
          f"({'insecure: plain links, no authentication' if cfg.keys is None else 'secure links'})"
          + (f", control on {control[0]}:{control[1]}" if control else ""),
          file=sys.stderr, flush=True)
    await stop.wait()
    print(f"[{cfg.name}] shutting down", file=sys.stderr, flush=True)
    if ctl is not None:
        ctl.close()
    await host.close()
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m jetraft.server",
                                 description="A jetraft cluster server (no NATS clients).")
    ap.add_argument("-c", "--config", required=True, help="jetraft-server's JSON configuration")
    ap.add_argument("--control", metavar="HOST:PORT",
                    help="serve JSON-line requests (publish, stream_info, msg_get, ...) here")
    a = ap.parse_args(argv)
    try:
        cfg = load_config(a.config)
        control = _hostport("--control", a.control) if a.control else None
        if control is not None and not _loopback(control[0]):
            raise ValueError("--control: must be a loopback address (the port is "
                             "unauthenticated)")
    except ValueError as e:
        print(f"jetraft.server: config: {e}", file=sys.stderr)
        return 1
    return asyncio.run(serve(cfg, control))


if __name__ == "__main__":
    sys.exit(main())
