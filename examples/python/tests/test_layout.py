"""The ctypes declarations match the C headers.

A program generated from jetraft/_abi.py (tools/gen_layout.py) prints, compiled against the
headers, the size of every struct, the offset and size of every field and the value of every
constant the binding relies on; this test compares them with what ctypes computes from the
declarations. A field added, removed, moved or retyped in a header, or a constant changed, fails
here with the struct and field named. The build runs the generated program from JETRAFT_LAYOUT;
without it the test generates and compiles one itself with cc.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import jetraft
from jetraft import _abi, errors

HERE = Path(__file__).resolve().parent
PKG = HERE.parent


def layout_output() -> str:
    exe = os.environ.get("JETRAFT_LAYOUT")
    if exe:
        return subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    cc = shutil.which("cc")
    lib = os.environ.get("JETRAFT_LIB")
    if not cc or not lib:
        raise unittest.SkipTest("no JETRAFT_LAYOUT, and no cc or JETRAFT_LIB to build one")
    with tempfile.TemporaryDirectory() as d:
        src, out = Path(d) / "layout.c", Path(d) / "layout"
        subprocess.run([sys.executable, str(PKG / "tools" / "gen_layout.py"),
                        str(PKG / "jetraft" / "_abi.py"), str(src)], check=True)
        subprocess.run([cc, "-std=c11", "-I", str(PKG.parents[1] / "include"), str(src), lib,
                        "-o", str(out)], check=True)
        env = dict(os.environ, LD_LIBRARY_PATH=str(Path(lib).parent))
        return subprocess.run([str(out)], capture_output=True, text=True, check=True,
                              env=env).stdout


class LayoutTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.lines = [line.split() for line in layout_output().splitlines()]

    def test_every_struct_has_the_c_size(self) -> None:
        seen = set()
        for kind, *rest in self.lines:
            if kind != "size":
                continue
            name, size = rest[0], int(rest[1])
            seen.add(name)
            with self.subTest(struct=name):
                self.assertEqual(
                    ctypes.sizeof(_abi.STRUCTS[name]), size,
                    f"{name}: ctypes size differs from C's sizeof (a field added in the header "
                    f"must be added to jetraft/_abi.py too)")
        self.assertEqual(seen, set(_abi.STRUCTS))

    def test_every_field_has_the_c_offset_and_size(self) -> None:
        n = 0
        for kind, *rest in self.lines:
            if kind != "field":
                continue
            n += 1
            struct, field, off, size = rest[0], rest[1], int(rest[2]), int(rest[3])
            with self.subTest(struct=struct, field=field):
                f = getattr(_abi.STRUCTS[struct], field)
                self.assertEqual((f.offset, f.size), (off, size),
                                 f"{struct}.{field}: (offset, size) in ctypes vs C")
        self.assertEqual(n, sum(len(s._fields_) for s in _abi.STRUCTS.values()))

    def test_constants_have_the_c_values(self) -> None:
        seen = {}
        for kind, *rest in self.lines:
            if kind == "const":
                seen[rest[0]] = int(rest[1])
        self.assertEqual(seen, _abi.CONSTANTS)

    def test_every_function_exists(self) -> None:
        count = [int(r[0]) for k, *r in self.lines if k == "functions"]
        self.assertEqual(count, [len(_abi.FUNCTIONS)])
        for name in _abi.FUNCTIONS:
            self.assertTrue(hasattr(jetraft.lib, name), name)

    def test_every_error_code_has_its_class(self) -> None:
        """Codes run from -1 down; the library names each, "UNKNOWN" past the last. A code
        appended to JR_ERRNO_MAP without a class here fails this."""
        code = -1
        while jetraft.err_name(code) != "UNKNOWN":
            name = jetraft.err_name(code)
            with self.subTest(code=code, name=name):
                cls = errors.BY_NAME.get(name)
                self.assertIsNotNone(cls, f"no JetraftError subclass for JR_{name} ({code})")
                assert cls is not None
                self.assertEqual(cls.code, code)
            code -= 1
        self.assertEqual(len(errors.BY_NAME), -code - 1)

    def test_the_library_is_the_version_the_binding_was_written_for(self) -> None:
        self.assertTrue(jetraft._lib.compatible(jetraft.version_number()))
        self.assertEqual(jetraft.version_number(), _abi.CONSTANTS["JR_VERSION_NUMBER"])


if __name__ == "__main__":
    unittest.main()
