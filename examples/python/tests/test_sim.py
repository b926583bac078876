"""The sim fixture's own calls through the binding: node configuration, clocks, the network,
disks and their faults, raw groups with a Python state machine, and the consumer calls the
ORDERS scenario does not reach (create/update refusals, pause, reset, ack kinds)."""

from __future__ import annotations

import unittest

import jetraft
from jetraft import (
    AckKind,
    ConsumerConfig,
    DeliverPolicy,
    ExistsError,
    Fsm,
    NodeConfig,
    NotFoundError,
    Sim,
    SimLink,
    StreamConfig,
)

SEC, MS = jetraft.SEC, jetraft.MS


class Log(Fsm):
    """A state machine that keeps every entry, with snapshots of the whole list."""

    def __init__(self) -> None:
        self.entries: list[bytes] = []
        self.restored_at = 0

    def apply(self, index: int, data: bytes) -> None:
        self.entries.append(data)

    def snapshot(self) -> bytes:
        return b"\0".join(self.entries)

    def restore(self, index: int, data: bytes) -> None:
        self.entries = data.split(b"\0") if data else []
        self.restored_at = index


class FixtureTest(unittest.TestCase):
    def test_configure_tags_and_log(self) -> None:
        seen: dict[int, NodeConfig] = {}
        logs: list[tuple[int, int, str]] = []

        def configure(i: int, cfg: NodeConfig) -> None:
            cfg.max_assets = 10 + i
            seen[i] = cfg

        with Sim(nodes=3, seed=5, cluster="east", tags=[["az:1"], ["az:2"], ["az:3"]],
                 configure=configure, on_log=lambda i, lvl, msg: logs.append((i, lvl, msg))) as sim:
            self.assertEqual(sorted(seen), [0, 1, 2])
            self.assertEqual(seen[1].tags, ["az:2"])
            self.assertEqual(seen[1].cluster, "east")
            self.assertTrue(seen[1].streams)
            self.assertEqual(seen[1].store_dir, "/store")
            self.assertEqual(seen[2].election_timeout_ms, 150)  # the fixture's, not the node's
            leader = sim.wait_meta()  # every server registered with a meta leader
            meta = sim.meta_info()
            self.assertEqual(meta.leader, sim.name(leader))
            self.assertEqual(meta.cluster, "east")
            self.assertEqual([s.tags for s in meta.servers], [["az:1"], ["az:2"], ["az:3"]])
            sim.stream_add(StreamConfig(name="S", replicas=2,
                                        placement=jetraft.Placement(tags=["!az:1"])))
            info = sim.stream_info("S")
            assert info.cluster is not None
            placed = {info.cluster.leader, *[r.name for r in info.cluster.replicas]}
            self.assertEqual(placed, {"n1", "n2"})
            assert info.config.placement is not None
            self.assertEqual(info.config.placement.tags, ["!az:1"])
        self.assertTrue(all(isinstance(m, str) for _, _, m in logs))

    def test_clocks_network_and_stats(self) -> None:
        with Sim(nodes=3, seed=2, link=SimLink(delay_min_ns=1 * MS, delay_max_ns=2 * MS)) as sim:
            self.assertEqual(sim.size, 3)
            self.assertEqual([sim.name(i) for i in range(3)], ["n0", "n1", "n2"])
            self.assertEqual(sim.index("n2"), 2)
            t = sim.now
            sim.run_for(1 * SEC)
            self.assertEqual(sim.now, t + SEC)
            self.assertEqual(sim.wall(0), jetraft.SIM_WALL_START_NS + sim.now - SEC)
            sim.set_wall(1, jetraft.SIM_WALL_START_NS + 3600 * SEC)
            self.assertGreaterEqual(sim.wall(1), jetraft.SIM_WALL_START_NS + 3600 * SEC)
            st = sim.stats()
            self.assertGreater(st.frames_delivered, 0)
            self.assertGreater(st.events, 0)
            sim.stream_add(StreamConfig(name="S", replicas=3))
            leader = sim.stream_leader("S")
            # the leader cut off: the others elect another one and go on
            sim.partition([leader])
            sim.run_for(3 * SEC)
            other = (leader + 1) % 3
            ack = sim.publish("S", b"x", node=other, msg_id="x")
            self.assertEqual(ack.seq, 1)
            self.assertNotEqual(sim.stream_leader("S", node=other), leader)
            sim.heal()
            sim.pause(other, 100 * MS)
            sim.run_for(1 * SEC)
            self.assertGreater(sim.stats().frames_dropped, 0)
            self.assertTrue(sim.step())

    def test_disks_faults_and_saved_copies(self) -> None:
        with Sim(nodes=3, seed=4) as sim:
            sim.stream_add(StreamConfig(name="S", replicas=3))
            sim.publish_many([("S", b"m%d" % i) for i in range(10)])
            files = sim.files(2)
            self.assertTrue(any(p.startswith("/wal") for p, _ in files))
            self.assertTrue(any(p.startswith("/store") for p, _ in files))
            saved = sim.disk_save(2)
            sim.publish_many([("S", b"n%d" % i) for i in range(10)])
            sim.crash(2)
            sim.disk_restore(2, saved)  # rolled back to before the second batch
            saved.close()
            wal = max((p for p, _ in sim.files(2) if p.startswith("/wal/")), key=len)
            sim.flip_bits(2, wal, 0, 0, 3)
            with self.assertRaises(NotFoundError):
                sim.remove_file(2, "/no/such/file")
            sim.restart(2)
            sim.run_for(5 * SEC)
            # its peers repair it: every message is back where the stream leader reads it
            sim.stream_stepdown("S", peer="n2")
            for seq in range(1, 21):
                self.assertEqual(sim.msg_get("S", seq).seq, seq)

    def test_a_failed_restart_says_why(self) -> None:
        broken: set[int] = set()

        def configure(i: int, cfg: NodeConfig) -> None:
            if i in broken:
                cfg.heartbeat_ms = cfg.election_timeout_ms + 1

        with Sim(nodes=3, seed=1, configure=configure) as sim:
            sim.crash(1)
            broken.add(1)
            with self.assertRaises(jetraft.InvalidArgumentError) as cm:
                sim.restart(1)
            self.assertIn("heartbeat_ms", cm.exception.message)
            broken.clear()
            sim.restart(1)
            self.assertTrue(sim.running(1))

    def test_node_keys_encrypt_at_rest_and_a_wrong_key_is_refused(self) -> None:
        keys = {i: bytes([0x30 + i]) * 32 for i in range(3)}  # JR_NODE_KEY_BYTES each

        def configure(i: int, cfg: NodeConfig) -> None:
            cfg.key = keys[i]

        marker = b"MARKER-python-binding-0123456789"
        with Sim(nodes=3, seed=2, configure=configure) as sim:
            sim.stream_add(StreamConfig(name="S", replicas=3))
            sim.publish_many([("S", marker + b"%d" % i) for i in range(20)])
            sim.run_for(1 * SEC)
            self.assertEqual(sim.msg_get("S", 7).data, marker + b"6")
            sim.crash(1)
            before = sim.files(1)
            keys[1] = b"\x01" * 32
            with self.assertRaises(jetraft.AuthError) as cm:
                sim.restart(1)
            self.assertIn("key", cm.exception.message)
            self.assertEqual(sim.files(1), before)
            keys[1] = bytes([0x31]) * 32
            sim.restart(1)
            self.assertTrue(sim.running(1))
            sim.crash(0)
            keys[0] = b"\x00" * 16
            with self.assertRaises(jetraft.InvalidArgumentError) as cm:
                sim.restart(0)
            self.assertIn("key_len", cm.exception.message)

    def test_a_server_joins_and_is_peer_removed(self) -> None:
        with Sim(nodes=3, seed=4) as sim:
            sim.wait_meta()
            sim.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))
            sim.add_node(join=True)
            self.assertEqual(sim.size, 4)
            sim.wait_meta()
            self.assertIn("n3", [s.name for s in sim.meta_info().servers])
            sim.stream_update(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=4))
            deadline = sim.now + 20 * SEC
            while sim.now < deadline:
                info = sim.stream_info("ORDERS")
                if info.cluster.move is None and len(info.cluster.replicas) == 3 and all(
                        r.current and not r.pending and not r.observer
                        for r in info.cluster.replicas):
                    break
                sim.run_for(50 * MS)
            with self.assertRaises(jetraft.NotMemberError):
                sim.server_peer_remove("nobody")
            # evacuate a replica off n0 (the stream goes back to R3 first); nowhere to go
            sim.stream_update(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))
            deadline = sim.now + 20 * SEC
            while sim.now < deadline:
                info = sim.stream_info("ORDERS")
                if info.cluster.move is None and len(info.cluster.replicas) == 2 and all(
                        r.current and not r.pending for r in info.cluster.replicas):
                    break
                sim.run_for(50 * MS)
            members = [info.cluster.leader] + [r.name for r in info.cluster.replicas]
            spare = next(n for n in ("n0", "n1", "n2", "n3") if n not in members)
            sim.stream_evacuate("ORDERS", members[1])
            moving = sim.stream_info("ORDERS").cluster.move
            if moving is not None:
                self.assertIn(spare, moving.target)
                self.assertNotIn(members[1], moving.target)
                self.assertIn("Migration", sim.stream_info("ORDERS").format_cluster())
            while sim.now < deadline + 20 * SEC:
                info = sim.stream_info("ORDERS")
                names = [info.cluster.leader] + [r.name for r in info.cluster.replicas]
                if info.cluster.move is None and sorted(names) == sorted(
                        [spare] + [m for m in members if m != members[1]]):
                    break
                sim.run_for(50 * MS)
            self.assertIsNone(info.cluster.move)
            self.assertNotIn(members[1], names)
            with self.assertRaises(jetraft.NoChangeError):
                sim.stream_cancel_move("ORDERS")
            with self.assertRaises(jetraft.NotMemberError):
                sim.stream_evacuate("ORDERS", members[1])
            sim.crash(3)
            sim.server_peer_remove("n3", node=0)
            self.assertNotIn("n3", [s.name for s in sim.meta_info(0).servers])
            self.assertFalse(sim.meta_info(0).removed)
            # the unsafe rescue refuses what is not a rescue: nothing waits, unknown, itself
            with self.assertRaises(jetraft.NoChangeError):
                sim.node(0).rescue("n1")
            with self.assertRaises(NotFoundError):
                sim.node(0).rescue("nobody")
            with self.assertRaises(jetraft.InvalidArgumentError):
                sim.node(0).rescue("n0")

    def test_a_server_is_evacuated_and_the_drain_cancelled(self) -> None:
        with Sim(nodes=4, seed=5) as sim:
            sim.wait_meta()
            sim.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))
            info = sim.stream_info("ORDERS")
            gone = info.cluster.leader
            sim.server_evacuate(gone)
            deadline = sim.now + 30 * SEC
            while sim.now < deadline:
                server = next(s for s in sim.meta_info().servers if s.name == gone)
                info = sim.stream_info("ORDERS")
                names = [info.cluster.leader] + [r.name for r in info.cluster.replicas]
                if not server.remaining and info.cluster.move is None and gone not in names:
                    break
                sim.run_for(50 * MS)
            self.assertTrue(server.draining)
            self.assertEqual(server.remaining, [])
            self.assertEqual(server.unplaced, [])
            self.assertNotIn(gone, names)
            self.assertEqual(len(names), 3)
            self.assertEqual(sim.meta_info().under_replicated, [])
            sim.server_evacuate_cancel(gone)
            server = next(s for s in sim.meta_info().servers if s.name == gone)
            self.assertFalse(server.draining)
            with self.assertRaises(jetraft.NoChangeError):
                sim.server_evacuate_cancel(gone)
            with self.assertRaises(jetraft.NotMemberError):
                sim.server_evacuate("nobody")

    def test_a_raw_group_on_the_fixture(self) -> None:
        applied: list[tuple[int, int, bytes]] = []
        restored: list[tuple[int, int, int]] = []
        steps = [0]

        def on_step(sim: Sim) -> None:
            steps[0] += 1

        with Sim(nodes=3, seed=9, streams=False,
                 on_apply=lambda i, g, idx, term, data: applied.append((i, idx, data)),
                 on_restore=lambda i, g, idx: restored.append((i, g, idx)),
                 on_step=on_step) as sim:
            fsms = [Log() for _ in range(3)]
            groups = [sim.node(i).group_open(1, ["n0", "n1", "n2"], fsms[i],
                                             snapshot_entries=8) for i in range(3)]
            self.assertTrue(sim.run_until(lambda: groups[0].leader is not None))
            lead = groups[sim.index(groups[0].leader or "")]
            sim.wait(*[lead.propose(b"e%d" % i) for i in range(20)])
            self.assertTrue(sim.run_until(lambda: all(len(f.entries) == 20 for f in fsms)))
            self.assertEqual(fsms[1].entries, [b"e%d" % i for i in range(20)])
            self.assertEqual(sum(1 for n, _, _ in applied if n == 0), 20)
            st = lead.status()
            self.assertEqual(st.role, jetraft.Role.LEADER)
            self.assertFalse(st.damaged)
            self.assertFalse(st.fsm_failed)
            self.assertGreater(st.snapshot_index, 0)
            self.assertEqual(lead.floor().commit_index, st.commit_index)
            self.assertEqual(sorted(p.name for p in lead.peers()), ["n0", "n1", "n2"])
            self.assertIs(lead.node.group(1), lead)
            self.assertIsNone(lead.node.group(2))
            # a follower restarts: its state comes back from its snapshot and log
            f = next(i for i in range(3) if groups[i] is not lead)
            sim.crash(f)
            sim.restart(f)
            again = Log()
            sim.node(f).group_open(1, ["n0", "n1", "n2"], again)
            self.assertTrue(sim.run_until(lambda: len(again.entries) == 20))
            self.assertGreater(again.restored_at, 0)
            self.assertIn((f, 1, again.restored_at), restored)
            self.assertEqual(steps[0], sim.stats().events)
            self.assertEqual(again.entries, fsms[f].entries)
            # leadership moves on request
            to = sim.name((sim.index(lead.node.name) + 1) % 3)
            sim.wait(lead.transfer(to))
            self.assertEqual(lead.leader, to)


class ReadmeTest(unittest.TestCase):
    def test_the_readme_examples_run(self) -> None:
        """Every ```python block of README.md runs as written."""
        import contextlib
        import io
        import re
        from pathlib import Path

        text = (Path(__file__).resolve().parents[1] / "README.md").read_text()
        blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
        self.assertTrue(blocks)
        for code in blocks:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(code, "README.md", "exec"), {})


class ConsumerCallsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.sim = Sim(nodes=3, seed=21)
        self.addCleanup(self.sim.close)
        self.sim.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))
        self.sim.publish_many([(f"orders.{i % 3}", b"m%d" % i) for i in range(1, 11)])

    def test_create_and_update_refusals(self) -> None:
        sim = self.sim
        self.assertEqual(sim.consumer_create("ORDERS", ConsumerConfig(durable_name="C")), "C")
        with self.assertRaises(ExistsError):
            sim.consumer_create("ORDERS", ConsumerConfig(durable_name="C", max_deliver=3))
        with self.assertRaises(NotFoundError):
            sim.consumer_update("ORDERS", ConsumerConfig(durable_name="NEW"))
        sim.consumer_update("ORDERS", ConsumerConfig(durable_name="C", description="updated"))
        info = sim.consumer_info("ORDERS", "C")
        assert info.config is not None
        self.assertEqual(info.config.description, "updated")
        eph = sim.consumer_add("ORDERS", ConsumerConfig(filter_subject="orders.1"))
        self.assertTrue(eph)  # a generated name
        self.assertEqual(sim.consumer_info("ORDERS", eph).num_pending, 4)

    def test_ack_kinds_reset_and_pause(self) -> None:
        sim = self.sim
        sim.consumer_add("ORDERS", ConsumerConfig(durable_name="C",
                                                  deliver_policy=DeliverPolicy.ALL))
        first = sim.fetch("ORDERS", "C", batch=2).msgs
        sim.ack(first[0].ack_token, AckKind.NAK)
        sim.ack(first[1].ack_token, AckKind.TERM, reason="bad order")
        again = sim.fetch("ORDERS", "C", batch=1).msgs
        self.assertEqual((again[0].stream_seq, again[0].delivered), (1, 2))
        sim.ack(again[0].ack_token)
        with self.assertRaises(NotFoundError):
            sim.ack(again[0].ack_token)  # not pending any more
        nxt = self.sim.wait(sim.node(0).ack_next(
            sim.fetch("ORDERS", "C", batch=1).msgs[0].ack_token, jetraft.FetchOpts(batch=2)))
        self.assertEqual([m.stream_seq for m in nxt.msgs], [4, 5])
        sim.consumer_reset("ORDERS", "C", 9)
        self.assertEqual(sim.fetch("ORDERS", "C", batch=1).msgs[0].stream_seq, 9)
        until = sim.wall(0) + 3600 * SEC
        sim.consumer_pause("ORDERS", "C", until)
        info = sim.consumer_info("ORDERS", "C")
        assert info.config is not None
        self.assertEqual(info.config.pause_until_ns, until)
        f = sim.fetch("ORDERS", "C", batch=1, expires_ns=200 * MS)
        self.assertEqual(f.msgs, [])
        check = sim.consumer_check("ORDERS", "C")
        self.assertEqual(check.consumer, "C")
        self.assertIn("ORDERS_C", check.format())


if __name__ == "__main__":
    unittest.main()
