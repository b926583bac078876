"""Generic conversion between the binding's dataclasses and the C structs of _abi.

A dataclass taking part declares, as class attributes:
  _ctype   the ctypes Structure it mirrors (its fields are named as the C fields);
  _init    the name of the C *_init_size function filling the struct's defaults, or None
           (then only `size` is set);
  _nested  {field: dataclass} for fields that are (pointers to, or arrays of pointers to, or
           embedded) structs;
  _enums   {field: IntEnum} for int fields read back as enums;
  _counts  {array field: count field} where the count is not "n" + the array's name.
A dataclass field with no C field of the same name is ignored by both directions.

from_c copies everything the struct points to into Python objects (str, bytes, lists, nested
dataclasses), so the result stays valid after a callback returns its borrowed memory; it reads
only the fields that the struct's `size` (the size the library built it with) covers, leaving
the dataclass defaults for the others. to_c builds a struct whose strings and arrays are kept
alive by the struct object itself (ctypes keeps what is assigned to a field).
"""

from __future__ import annotations

import ctypes
import dataclasses
from typing import Any, TypeVar

from ._lib import lib

T = TypeVar("T")

# data fields carried as (pointer, length) pairs: the pointer field -> its length field (a
# struct's field of that name is such a pair only if the struct has the length field too)
_BYTES = {"hdr": "hdr_len", "data": "len", "key": "key_len"}


def enc(s: str | bytes | None) -> bytes | None:
    """A str (or bytes) as the NUL-terminated UTF-8 the C side reads; None stays NULL."""
    if s is None or isinstance(s, bytes):
        return s
    return s.encode()


def dec(b: bytes | None) -> str | None:
    """A C string copied into a str (NULL is None); bytes that are not UTF-8 survive as
    surrogate escapes."""
    return None if b is None else b.decode("utf-8", "surrogateescape")


def str_array(items: list[str] | tuple[str, ...]) -> ctypes.Array | None:
    """A C array of strings (const char *const *), or None for an empty list."""
    if not items:
        return None
    return (ctypes.c_char_p * len(items))(*[enc(s) for s in items])


def strs(ptr: Any, n: int) -> list[str]:
    """Copies n C strings from a const char *const *."""
    return [dec(ptr[i]) or "" for i in range(n)] if n and ptr else []


def c_defaults(ctype: type[ctypes.Structure], init: str) -> ctypes.Structure:
    """A struct filled by its C *_init_size function: the library's own defaults."""
    cs = ctype()
    getattr(lib, init)(ctypes.byref(cs), ctypes.sizeof(cs))
    return cs


def _count_name(cls: type, name: str) -> str:
    return getattr(cls, "_counts", {}).get(name, "n" + name)


def _covered(cs: ctypes.Structure, name: str, limit: int) -> bool:
    f = getattr(type(cs), name)
    return f.offset + f.size <= limit


def from_c(cls: type[T], cs: ctypes.Structure) -> T:
    """Copies struct cs (a Structure instance, not a pointer) into a new cls."""
    ctype = type(cs)
    cfields = dict(ctype._fields_)
    limit = cs.size if "size" in cfields and cs.size else ctypes.sizeof(ctype)
    nested: dict[str, type] = getattr(cls, "_nested", {})
    enums: dict[str, type] = getattr(cls, "_enums", {})
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = f.name
        if name not in cfields or not _covered(cs, name, limit):
            continue
        ftype = cfields[name]
        v = getattr(cs, name)
        if name in _BYTES and _BYTES[name] in cfields:
            n = getattr(cs, _BYTES[name])
            kw[name] = ctypes.string_at(v, n) if v and n else b""
        elif ftype is ctypes.c_char_p:
            kw[name] = dec(v)
        elif ftype is ctypes.POINTER(ctypes.c_char_p):
            kw[name] = strs(v, getattr(cs, _count_name(cls, name)))
        elif name == "metadata":
            n = getattr(cs, _count_name(cls, name))
            kw[name] = {dec(v[i].key) or "": dec(v[i].value) or "" for i in range(n)} if v else {}
        elif ftype is ctypes.POINTER(ctypes.c_int64):
            n = getattr(cs, _count_name(cls, name))
            kw[name] = [v[i] for i in range(n)] if v else []
        elif name in nested:
            sub = nested[name]
            if isinstance(v, ctypes.Structure):  # embedded by value
                kw[name] = from_c(sub, v)
            elif hasattr(ftype, "_type_") and issubclass(ftype._type_, ctypes._Pointer):
                n = getattr(cs, _count_name(cls, name))
                kw[name] = [from_c(sub, v[i].contents) for i in range(n) if v[i]] if v else []
            else:
                kw[name] = from_c(sub, v.contents) if v else None
        elif name in enums:
            try:
                kw[name] = enums[name](v)
            except ValueError:  # a value a newer library added
                kw[name] = v
        elif f.type == "bool" or f.type is bool:
            kw[name] = bool(v)
        else:
            kw[name] = v
    return cls(**kw)


def to_c(obj: Any) -> ctypes.Structure:
    """Builds the C struct mirroring dataclass obj (defaults from its _init function first)."""
    cls = type(obj)
    ctype: type[ctypes.Structure] = cls._ctype
    init = getattr(cls, "_init", None)
    if init:
        cs = c_defaults(ctype, init)
    else:
        cs = ctype()
        cs.size = ctypes.sizeof(ctype)
    cfields = dict(ctype._fields_)
    nested: dict[str, type] = getattr(cls, "_nested", {})
    for f in dataclasses.fields(obj):
        name = f.name
        if name not in cfields or name == "size":
            continue
        ftype = cfields[name]
        v = getattr(obj, name)
        if name in _BYTES and _BYTES[name] in cfields:
            buf = bytes(v or b"")
            setattr(cs, name, ctypes.cast(ctypes.c_char_p(buf), ctypes.c_void_p) if buf else None)
            setattr(cs, _BYTES[name], len(buf))
            cs._keep = getattr(cs, "_keep", []) + [buf]  # the bytes the pointer points into
        elif ftype is ctypes.c_char_p:
            setattr(cs, name, enc(v))
        elif ftype is ctypes.POINTER(ctypes.c_char_p):
            arr = str_array(list(v or []))
            setattr(cs, name, arr)
            setattr(cs, _count_name(cls, name), len(v or []))
        elif name == "metadata":
            items = list((v or {}).items())
            from ._abi import jr_kv

            arr = (jr_kv * len(items))(*[jr_kv(enc(k), enc(x)) for k, x in items]) if items else None
            setattr(cs, name, arr)
            setattr(cs, _count_name(cls, name), len(items))
        elif ftype is ctypes.POINTER(ctypes.c_int64):
            vals = [int(x) for x in (v or [])]
            setattr(cs, name, (ctypes.c_int64 * len(vals))(*vals) if vals else None)
            setattr(cs, _count_name(cls, name), len(vals))
        elif name in nested:
            if isinstance(getattr(cs, name), ctypes.Structure):
                setattr(cs, name, to_c(v))
            elif hasattr(ftype, "_type_") and issubclass(ftype._type_, ctypes._Pointer):
                items = [ctypes.pointer(to_c(x)) for x in (v or [])]
                arr = (ftype._type_ * len(items))(*items) if items else None
                setattr(cs, name, arr)
                setattr(cs, _count_name(cls, name), len(items))
            else:
                setattr(cs, name, ctypes.pointer(to_c(v)) if v is not None else None)
        elif v is not None:
            setattr(cs, name, int(v) if not isinstance(v, float) else v)
    return cs


def render(fn: Any, *args: Any) -> str:
    """Calls an snprintf-like C formatter (…, char *buf, size_t len) twice: once for the length,
    then into a buffer of that size."""
    n = fn(*args, None, 0)
    if n < 0:
        from .errors import check

        check(n)
    buf = ctypes.create_string_buffer(n + 1)
    fn(*args, buf, n + 1)
    return buf.value.decode("utf-8", "surrogateescape")
