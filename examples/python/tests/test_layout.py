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
import re
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


INCLUDE = PKG.parents[1] / "include"


def header_text() -> str:
    """Every public header, comments and preprocessor lines removed."""
    text = "\n".join(p.read_text() for p in sorted((INCLUDE / "jetraft").glob("*.h")))
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)


def split_params(params: str) -> list[str]:
    """Splits a C parameter list at the commas outside parentheses; [] for "(void)"."""
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        cur += ch
    if cur.strip() and cur.strip() != "void":
        out.append(cur.strip())
    return out


def parse_decl(decl: str) -> tuple[str, str, list[str]]:
    """(return type, name, parameters) of "RET NAME(PARAMS)"."""
    m = re.fullmatch(r"\s*(.*?)\b(\w+)\s*\((.*)\)\s*", decl, flags=re.S)
    assert m, decl
    return m.group(1).strip(), m.group(2), split_params(m.group(3))


class Headers:
    """The prototypes, callback typedefs and function-pointer fields of the public headers."""

    def __init__(self) -> None:
        text = header_text()
        self.functions: dict[str, tuple[str, list[str]]] = {}
        for decl in re.findall(r"JR_API\s+([^;{]*?\))\s*;", text, flags=re.S):
            ret, name, params = parse_decl(decl)
            self.functions[name] = (ret, params)
        self.callbacks: dict[str, tuple[str, list[str]]] = {}
        for ret, name, params in re.findall(
                r"typedef\s+([\w\s\*]+?)\(\s*\*\s*(\w+)\)\s*\(([^;]*?)\)\s*;", text, flags=re.S):
            self.callbacks[name] = (ret.strip(), split_params(params))
        self.fields: dict[tuple[str, str], tuple[str, list[str]]] = {}
        for sname, body in re.findall(r"typedef struct (\w+) \{(.*?)\} \1;", text, flags=re.S):
            for ret, fname, params in re.findall(
                    r"([\w\s\*]+?)\(\s*\*\s*(\w+)\)\s*\(([^;]*?)\)\s*;", body, flags=re.S):
                self.fields[(sname, fname)] = (ret.strip().split("\n")[-1].strip(),
                                              split_params(params))

    def param_type(self, param: str) -> str:
        """The type of a parameter, its name removed ("const char *name" -> "const char *")."""
        if "(*" in param:
            return param  # a function pointer, compared by its own parameters
        toks = re.sub(r"\*", " * ", param).split()
        if len(toks) > 1 and toks[-1] != "*" and re.fullmatch(r"\w+", toks[-1]) and \
                toks[-1] not in ("int", "unsigned", "char", "void", "double"):
            toks = toks[:-1]  # the parameter's name
        return " ".join(toks)

    def check(self, c: str, py: object, where: str) -> list[str]:
        """Differences between C type c and the ctypes type py (function pointers compared by
        return and parameter types)."""
        c = self.param_type(c)
        if "(*" in c:
            m = re.fullmatch(r"(.*?)\(\s*\*\s*\w*\s*\)\s*\((.*)\)", c, flags=re.S)
            assert m, c
            return self.check_fn(m.group(1).strip(), split_params(m.group(2)), py, where)
        base = c.replace("const", " ").split()
        stars = base.count("*")
        base = [t for t in base if t != "*"]
        b = " ".join(base)
        if stars == 0 and b in self.callbacks:
            ret, params = self.callbacks[b]
            return self.check_fn(ret, params, py, f"{where} ({b})")
        if stars == 0:
            want = {"int": ctypes.c_int, "unsigned": ctypes.c_uint, "uint64_t": ctypes.c_uint64,
                    "int64_t": ctypes.c_int64, "uint32_t": ctypes.c_uint32,
                    "size_t": ctypes.c_size_t, "double": ctypes.c_double, "void": None}[b]
        elif stars == 1 and b == "char":
            want = ctypes.c_char_p
        elif stars == 1 and b in _abi.STRUCTS:
            want = ctypes.POINTER(_abi.STRUCTS[b])
        elif stars == 1 and b == "unsigned":
            want = ctypes.POINTER(ctypes.c_uint)
        elif stars == 1:
            want = ctypes.c_void_p  # void * and opaque handles
        elif stars == 2 and b != "char":
            want = ctypes.POINTER(ctypes.c_void_p)  # an opaque handle's out-parameter
        else:
            want = ctypes.POINTER(ctypes.c_char_p)
        return [] if py is want else [f"{where}: C {c!r} is {want}, ctypes has {py}"]

    def check_fn(self, ret: str, params: list[str], py: object, where: str) -> list[str]:
        if not (isinstance(py, type) and issubclass(py, ctypes._CFuncPtr)):  # type: ignore
            return [f"{where}: C function pointer, ctypes has {py}"]
        argtypes = py._argtypes_  # type: ignore[attr-defined]
        if len(argtypes) != len(params):
            return [f"{where}: {len(params)} parameters in C, {len(argtypes)} in ctypes"]
        out = self.check(ret, py._restype_, f"{where} return")  # type: ignore[attr-defined]
        for i, (c, t) in enumerate(zip(params, argtypes)):
            out += self.check(c, t, f"{where} parameter {i + 1}")
        return out


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

    def test_every_public_function_is_bound_with_its_signature(self) -> None:
        """Every JR_API function of the headers has a prototype in _abi.FUNCTIONS whose return
        and parameter types are the C ones (callbacks compared parameter by parameter)."""
        h = Headers()
        self.assertGreater(len(h.functions), 100)
        self.assertEqual(sorted(set(h.functions) - set(_abi.FUNCTIONS)), [],
                         "public functions the binding does not declare")
        self.assertEqual(sorted(set(_abi.FUNCTIONS) - set(h.functions)), [],
                         "declared functions the headers do not have")
        problems = []
        for name, (ret, params) in h.functions.items():
            restype, argtypes = _abi.FUNCTIONS[name]
            problems += self.compare(h, name, ret, params, restype, argtypes)
        self.assertEqual(problems, [])

    def compare(self, h: "Headers", name: str, ret: str, params: list[str], restype: object,
                argtypes: list[object]) -> list[str]:
        if len(params) != len(argtypes):
            return [f"{name}: {len(params)} parameters in C, {len(argtypes)} in ctypes"]
        out = h.check(ret, restype, f"{name} return")
        for i, (c, t) in enumerate(zip(params, argtypes)):
            out += h.check(c, t, f"{name} parameter {i + 1}")
        return out

    def test_every_function_is_called_by_the_package(self) -> None:
        """Binding a prototype is not wrapping it: each function is called somewhere."""
        source = "\n".join(p.read_text() for p in (PKG / "jetraft").glob("*.py")
                           if p.name != "_abi.py")
        unused = [n for n in _abi.FUNCTIONS if not re.search(rf"\b{n}\b", source)]
        self.assertEqual(unused, [])

    def test_every_function_pointer_field_has_its_signature(self) -> None:
        h = Headers()
        self.assertIn(("jr_host", "send"), h.fields)
        problems = []
        for (sname, fname), (ret, params) in h.fields.items():
            if sname not in _abi.STRUCTS:
                continue  # a table the binding never builds (jr_vfs)
            ftype = dict(_abi.STRUCTS[sname]._fields_)[fname]
            if ftype is ctypes.c_void_p:
                continue  # a table the binding never fills (the allocator, the vfs)
            problems += h.check_fn(ret, params, ftype, f"{sname}.{fname}")
        self.assertEqual(problems, [])

    def test_results_read_only_what_size_covers(self) -> None:
        """A struct built by an older library (smaller size) is read up to its size; the
        fields it lacks keep their defaults, whatever bytes follow it."""
        from jetraft._conv import from_c

        cs = _abi.jr_stream_state(size=_abi.jr_stream_state.last_seq.offset, msgs=5, bytes=9,
                                  first_seq=1, first_ts=7, last_seq=5, num_subjects=3)
        got = from_c(jetraft.StreamState, cs)
        self.assertEqual((got.msgs, got.bytes, got.first_seq, got.first_ts), (5, 9, 1, 7))
        self.assertEqual((got.last_seq, got.num_subjects), (0, 0))  # not covered

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
