"""Finding, loading and checking libjetraft.so.

Where the library is looked for, in order:
  1. the JETRAFT_LIB environment variable: the path of libjetraft.so (the test suite sets it
     to the library it just built);
  2. the in-tree build: <repository>/build/lib/libjetraft.so, the package sitting in
     <repository>/examples/python/jetraft;
  3. an install: the libdir pkg-config reports for libjetraft, then the linker's search path
     (ctypes.util.find_library, i.e. ldconfig).
The first that exists is loaded; its jr_version_number() must be one this binding was written
for (see compatible()), otherwise loading fails with LibraryError saying which file and which
versions.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import subprocess
from pathlib import Path

from . import _abi


class LibraryError(ImportError):
    """libjetraft could not be found, loaded, or is a version this binding does not support."""


def compatible(found: int, wanted: int = _abi.VERSION_NUMBER) -> bool:
    """Whether a library of version number `found` can serve a binding written for `wanted`.

    Version numbers are MAJOR * 10000 + MINOR * 100 + PATCH. Fields are only ever appended to
    the ABI, so a newer library of the same major version serves an older binding; while the
    major version is 0, a minor version may break the ABI, so it must match too.
    """
    fmaj, fmin = found // 10000, found // 100 % 100
    wmaj, wmin = wanted // 10000, wanted // 100 % 100
    if fmaj != wmaj or found < wanted:
        return False
    return wmaj != 0 or fmin == wmin


def _candidates() -> list[tuple[str, str]]:
    """(how it was found, path or name) in search order."""
    out: list[tuple[str, str]] = []
    env = os.environ.get("JETRAFT_LIB")
    if env:
        out.append(("JETRAFT_LIB", env))
        return out  # an explicit choice is never second-guessed
    tree = Path(__file__).resolve().parents[3] / "build" / "lib" / "libjetraft.so"
    if tree.exists():
        out.append(("in-tree build", str(tree)))
    pkgconfig = shutil.which("pkg-config")
    if pkgconfig:
        try:
            libdir = subprocess.run(
                [pkgconfig, "--variable=libdir", "libjetraft"],
                capture_output=True, text=True, timeout=10, check=False,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            libdir = ""
        for so in ("libjetraft.so", "libjetraft.so.0"):
            if libdir and (Path(libdir) / so).exists():
                out.append(("pkg-config", str(Path(libdir) / so)))
                break
    found = ctypes.util.find_library("jetraft")
    if found:
        out.append(("ldconfig", found))
    return out


def load() -> ctypes.CDLL:
    """Loads the first library found, binds its prototypes and checks its version."""
    tried = []
    for how, path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({how}): {e}")
            continue
        try:
            found = lib.jr_version_number()
        except AttributeError:
            raise LibraryError(f"{path} ({how}) is not libjetraft: no jr_version_number") from None
        if not compatible(found):
            raise LibraryError(
                f"{path} ({how}) is libjetraft {found // 10000}.{found // 100 % 100}."
                f"{found % 100} (version number {found}); this binding was written for version "
                f"number {_abi.VERSION_NUMBER} and needs the same major (and, before 1.0, "
                f"minor) version, no older"
            )
        try:
            _abi.bind(lib)
        except AttributeError as e:
            raise LibraryError(f"{path} ({how}) lacks a function the binding needs: {e}") from None
        return lib
    detail = "; ".join(tried) if tried else "nothing found"
    raise LibraryError(
        "libjetraft.so not found: set JETRAFT_LIB to its path, build it in the repository "
        f"(meson setup build && ninja -C build), or install it ({detail})"
    )


#: The loaded library, with every prototype of _abi.FUNCTIONS set.
lib = load()
