"""Errors: each JR_E* code arrives as its JetraftError subclass, with the library's text and the
node's message; a request refused at once raises at the call; loading a wrong library fails with
a message saying what was found."""

from __future__ import annotations

import os
import subprocess
import sys
import unittest
from pathlib import Path

import jetraft
from jetraft import (
    ConsumerConfig,
    ExistsError,
    InvalidArgumentError,
    JetraftError,
    LimitError,
    NoStreamError,
    NotFoundError,
    NotSupportedError,
    Sim,
    StreamConfig,
    WrongLastMsgIdError,
    WrongLastSeqError,
)
from jetraft._lib import compatible

PKG = Path(__file__).resolve().parents[1]


class ErrorMappingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.sim = Sim(nodes=3, seed=3)
        cls.sim.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.sim.close()

    def test_not_found_carries_the_nodes_message(self) -> None:
        with self.assertRaises(NotFoundError) as cm:
            self.sim.stream_info("NOPE")
        e = cm.exception
        self.assertEqual((e.code, e.name), (-15, "ENOTFOUND"))
        self.assertEqual(e.strerror, jetraft.strerror(-15))
        self.assertIn("NOPE", e.message)
        self.assertIn("NOPE", str(e))
        self.assertIsInstance(e, JetraftError)
        self.assertIsInstance(e, LookupError)

    def test_an_invalid_field_is_named(self) -> None:
        with self.assertRaises(InvalidArgumentError) as cm:
            self.sim.stream_add(StreamConfig(name="BAD", subjects=["bad.>"], max_age_ns=1))
        self.assertIn("max_age", cm.exception.message)
        self.assertIsInstance(cm.exception, ValueError)

    def test_another_config_under_the_same_name_exists(self) -> None:
        self.sim.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=3))
        with self.assertRaises(ExistsError):
            self.sim.stream_add(StreamConfig(name="ORDERS", subjects=["orders.>"], replicas=1,
                                             max_msgs=5))

    def test_create_says_whether_it_created(self) -> None:
        cfg = StreamConfig(name="NEWS", subjects=["news.>"], replicas=3)
        self.assertIs(self.sim.wait(self.sim.node(0).stream_create(cfg)), True)
        self.assertIs(self.sim.wait(self.sim.node(1).stream_create(cfg)), False)

    def test_subjects_and_deleted_details(self) -> None:
        self.sim.stream_add(StreamConfig(name="DET", subjects=["det.>"], replicas=3))
        for i in range(6):
            self.sim.publish(f"det.{'ab'[i % 2]}", b"x")
        self.sim.wait(self.sim.node(1).msg_delete("DET", 3))
        page = self.sim.wait(self.sim.node(2).stream_subjects("DET"))
        self.assertEqual((page.total, page.offset), (2, 0))
        self.assertEqual(page.subjects, {"det.a": 2, "det.b": 3})
        page = self.sim.wait(self.sim.node(0).stream_subjects("DET", "det.*", offset=1))
        self.assertEqual(page.subjects, {"det.b": 3})
        deleted = self.sim.wait(self.sim.node(0).stream_deleted("DET"))
        self.assertEqual((deleted.total, deleted.ranges), (1, [(3, 3)]))
        with self.assertRaises(InvalidArgumentError):
            self.sim.wait(self.sim.node(0).stream_subjects("DET", "det..x"))

    def test_a_refusal_says_which_limit_or_which_last_msg_id(self) -> None:
        self.sim.stream_add(StreamConfig(name="LIM", subjects=["lim.>"], replicas=3,
                                         max_msgs=1, discard=jetraft.Discard.NEW))
        self.sim.publish("lim.a", b"1", msg_id="first")
        with self.assertRaises(LimitError) as cm:
            self.sim.publish("lim.a", b"2")
        self.assertEqual(cm.exception.message, "maximum messages exceeded")
        with self.assertRaises(WrongLastMsgIdError) as cm:
            self.sim.publish("lim.b", b"3", expected_last_msg_id="other")
        self.assertEqual(cm.exception.result.last_msg_id, "first")

    def test_no_stream_for_a_subject_or_a_consumer(self) -> None:
        with self.assertRaises(NoStreamError):
            self.sim.publish("nobody.listens", b"x")
        with self.assertRaises(NoStreamError):
            self.sim.consumer_add("NOPE", ConsumerConfig(durable_name="C"))
        with self.assertRaises(NotFoundError) as cm:
            self.sim.consumer_info("ORDERS", "GHOST")
        self.assertTrue(cm.exception.message)

    def test_an_expectation_failure_carries_the_ack(self) -> None:
        first = self.sim.publish("orders.x", b"1")
        with self.assertRaises(WrongLastSeqError) as cm:
            self.sim.publish("orders.x", b"2", expected_last_seq=first.seq + 5)
        ack = cm.exception.result
        self.assertIsInstance(ack, jetraft.PubAck)
        self.assertEqual(ack.seq, first.seq)  # the actual last seq

    def test_a_refused_call_raises_at_once_with_the_nodes_message(self) -> None:
        with Sim(nodes=1, seed=1, streams=False) as sim:
            with self.assertRaises(NotSupportedError) as cm:
                sim.node(0).stream_info("ORDERS")
            self.assertEqual(cm.exception.code, -21)

    def test_every_code_maps_to_its_class(self) -> None:
        for name, cls in jetraft.BY_NAME.items():
            e = JetraftError.from_code(cls.code, "why")
            self.assertIs(type(e), cls)
            self.assertEqual(e.name, name)
            self.assertEqual(str(e), f"{name}: {jetraft.strerror(cls.code)}: why")
        unknown = JetraftError.from_code(-999, "from the future")
        self.assertIs(type(unknown), JetraftError)
        self.assertEqual(unknown.name, "UNKNOWN")


class LoadingTest(unittest.TestCase):
    def run_import(self, lib: str) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, JETRAFT_LIB=lib, PYTHONPATH=str(PKG))
        return subprocess.run([sys.executable, "-c", "import jetraft"], env=env,
                              capture_output=True, text=True, timeout=60)

    def test_a_missing_library_says_how_to_get_one(self) -> None:
        r = self.run_import("/nonexistent/libjetraft.so")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("LibraryError", r.stderr)
        self.assertIn("JETRAFT_LIB", r.stderr)

    def test_another_library_is_refused(self) -> None:
        import ctypes.util

        libc = ctypes.util.find_library("c")
        if not libc:
            self.skipTest("no libc to try")
        r = self.run_import(libc)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("is not libjetraft", r.stderr)

    def test_version_rule(self) -> None:
        self.assertTrue(compatible(100, 100))
        self.assertTrue(compatible(101, 100))  # a newer patch
        self.assertFalse(compatible(200, 100))  # another minor before 1.0
        self.assertFalse(compatible(99, 100))  # older than written for
        self.assertTrue(compatible(10300, 10100))  # a newer minor after 1.0
        self.assertFalse(compatible(20000, 10100))  # another major


if __name__ == "__main__":
    unittest.main()
