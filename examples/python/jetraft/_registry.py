"""Keeping Python callbacks alive while the C side may call them.

The C side never sees a Python callable. Every callback type has one trampoline here, a
CFUNCTYPE object made at import and kept by this module for the life of the process, and
every request passes the trampoline and a small integer (its `void *arg`) naming an entry of
`_live`. The entry holds the Python handler and whatever the request must keep alive; it is
removed after the handler says the call was the last one (a request's single completion; a
fetch's end; a subscription's end; a node's close for its host and advisory handler). So a
collected Python object can never be called from C: the function pointers C holds are
immortal, and an id whose entry is gone is ignored.

Handlers run inside jr_node_recv/jr_node_tick (or the sim's run calls), on the thread driving
the node. An exception escaping a handler cannot cross the C frames above it: it is recorded in
`raised` and re-raised by whoever drives the loop (Sim does, after its run returns).
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

from . import _abi

#: handler(*args) -> True when this was its last call (the entry is then released)
Handler = Callable[..., bool]

_live: dict[int, Handler] = {}
_ids = itertools.count(1)

#: exceptions raised by handlers, oldest first, until a driver takes them (take_raised)
raised: list[BaseException] = []


def register(handler: Handler) -> int:
    """Adds handler and returns the id to pass as the C callback's arg."""
    key = next(_ids)
    _live[key] = handler
    return key


def release(key: int) -> None:
    """Removes an entry (a request the C side refused, or one whose last call came)."""
    _live.pop(key, None)


def live() -> int:
    """How many entries are alive (tests use it to see that finished requests are released)."""
    return len(_live)


def take_raised() -> BaseException | None:
    """The oldest exception a handler raised since the last call, or None; clears the list."""
    if not raised:
        return None
    first = raised[0]
    raised.clear()
    return first


def _dispatch(key: int | None, *args: Any) -> Any:
    handler = _live.get(key or 0)
    if handler is None:
        return 0
    try:
        if handler(*args):
            _live.pop(key or 0, None)
    except BaseException as e:  # noqa: BLE001 - it must not unwind through C
        raised.append(e)
    return 0


def _call_value(key: int | None, *args: Any) -> Any:
    """For callbacks that return a value to C (host clock, predicates, fsm): the handler's
    return value is passed through; an exception returns `0` after being recorded."""
    handler = _live.get(key or 0)
    if handler is None:
        return 0
    try:
        return handler(*args)
    except BaseException as e:  # noqa: BLE001
        raised.append(e)
        return 0


def _make(fntype: Any, value: bool = False) -> Any:
    target = _call_value if value else _dispatch

    def trampoline(arg: int | None, *args: Any) -> Any:
        return target(arg, *args)

    return fntype(trampoline)


# One trampoline per callback type; these objects live as long as the module (forever).
stream_cb = _make(_abi.stream_fn)
purge_cb = _make(_abi.purge_fn)
create_cb = _make(_abi.create_fn)
subjects_cb = _make(_abi.subjects_fn)
deleted_cb = _make(_abi.deleted_fn)
msg_cb = _make(_abi.msg_fn)
stream_info_cb = _make(_abi.stream_info_fn)
names_cb = _make(_abi.names_fn)
stream_page_cb = _make(_abi.stream_page_fn)
publish_cb = _make(_abi.publish_fn)
consumer_cb = _make(_abi.consumer_fn)
consumer_info_cb = _make(_abi.consumer_info_fn)
consumer_page_cb = _make(_abi.consumer_page_fn)
fetch_cb = _make(_abi.fetch_fn)
push_cb = _make(_abi.push_fn)
advisory_cb = _make(_abi.advisory_fn)
meta_info_cb = _make(_abi.meta_info_fn)
check_cb = _make(_abi.check_fn)
node_health_cb = _make(_abi.node_health_fn)
propose_cb = _make(_abi.propose_fn)
done_cb = _make(_abi.done_fn)
# callbacks whose return value C uses
sim_pred = _make(_abi.sim_pred_fn, value=True)
sim_files = _make(_abi.sim_files_fn, value=True)
