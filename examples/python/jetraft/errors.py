"""JetraftError and one subclass per JR_E* code (include/jetraft/errors.h).

An error carries the code, its name (jr_err_name, e.g. "ENOTFOUND"), its description
(jr_strerror) and the node's message for this failure (the callback's msg, or jr_node_errmsg
for a call refused at once), e.g. "stream 'NOPE' not found".
"""

from __future__ import annotations

from typing import Any

from ._lib import lib


class JetraftError(Exception):
    """A libjetraft call failed. Subclasses name the code; `code` is the negative JR_E* value."""

    code: int = 0
    #: what the callback reported along with the error, where it had something: the PubAck of
    #: a failed publish (with JR_EWRONGLASTSEQ its seq is the actual last one), the messages a
    #: fetch got before it failed, this node's own view with a MetaInfo; else None
    result: Any = None

    def __init__(self, code: int, message: str = "") -> None:
        self.code = code
        self.name: str = lib.jr_err_name(code).decode()
        self.strerror: str = lib.jr_strerror(code).decode()
        self.message: str = message
        text = f"{self.name}: {self.strerror}"
        if message and message != self.strerror:
            text += f": {message}"
        super().__init__(text)

    @staticmethod
    def from_code(code: int, message: str = "") -> "JetraftError":
        """The exception for `code`: an instance of its subclass (JetraftError for a code this
        binding does not know, e.g. one a newer library added)."""
        return _BY_CODE.get(code, JetraftError)(code, message)


class InvalidArgumentError(JetraftError, ValueError):
    code = -1


class OutOfMemoryError(JetraftError, MemoryError):
    code = -2


class StorageIOError(JetraftError):
    code = -3


class CorruptError(JetraftError):
    code = -4


class NoSpaceError(JetraftError):
    code = -5


class BusyError(JetraftError):
    code = -6


class NotLeaderError(JetraftError):
    code = -7


class NoLeaderError(JetraftError):
    code = -8


class NoQuorumError(JetraftError):
    code = -9


class LeaderLostError(JetraftError):
    code = -10


class TransferInProgressError(JetraftError):
    code = -11


class TimedOutError(JetraftError):
    code = -12


class CanceledError(JetraftError):
    code = -13


class ClosedError(JetraftError):
    code = -14


class NotFoundError(JetraftError, LookupError):
    code = -15


class ExistsError(JetraftError):
    code = -16


class VersionError(JetraftError):
    code = -17


class AuthError(JetraftError):
    code = -18


class MessageSizeError(JetraftError):
    code = -19


class MisuseError(JetraftError):
    code = -20


class NotSupportedError(JetraftError):
    code = -21


class DamagedError(JetraftError):
    code = -22


class NoResourcesError(JetraftError):
    code = -23


class NoStreamError(JetraftError):
    code = -24


class NotVoterError(JetraftError):
    code = -25


class CompactedError(JetraftError):
    code = -26


class RangeError(JetraftError):
    code = -27


class WrongStreamError(JetraftError):
    code = -28


class WrongLastSeqError(JetraftError):
    code = -29


class WrongLastSubjectSeqError(JetraftError):
    code = -30


class WrongLastMsgIdError(JetraftError):
    code = -31


class LimitError(JetraftError):
    code = -32


class SealedError(JetraftError):
    code = -33


class DeniedError(JetraftError):
    code = -34


class PeerRemapError(JetraftError):
    code = -35


class NotMemberError(JetraftError):
    code = -36


class RemovedError(JetraftError):
    code = -37


class NoChangeError(JetraftError):
    code = -38


#: code -> subclass, for every subclass above.
_BY_CODE: dict[int, type[JetraftError]] = {
    cls.code: cls for cls in list(globals().values())
    if isinstance(cls, type) and issubclass(cls, JetraftError) and cls is not JetraftError
}

#: name ("ENOTFOUND") -> subclass, as the library names the codes.
BY_NAME: dict[str, type[JetraftError]] = {
    lib.jr_err_name(code).decode(): cls for code, cls in _BY_CODE.items()
}


def check(rc: int, message: str = "") -> int:
    """Returns rc if it is not negative, else raises the JetraftError for it."""
    if rc < 0:
        raise JetraftError.from_code(rc, message)
    return rc

#: The public names: JetraftError and its subclasses (and check).
__all__ = ["check", "BY_NAME"] + [
    n for n, v in list(globals().items())
    if isinstance(v, type) and issubclass(v, JetraftError)
]
