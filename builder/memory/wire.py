"""The broker protocol, both ends: JSON lines over a Unix socket, one connection per job.

Every message is a frozen dataclass below, encoded by :func:`encode` and read back by
:func:`decode` — the one place that knows the keys.  The launcher sends :class:`Acquire`;
the broker answers :class:`Queued` at once and again every :data:`HEARTBEAT` seconds while
the job waits, then :class:`Grant` (and later :class:`Pause`, :class:`Resume` or
:class:`Requeue`); the launcher sends :class:`Report` lines and a final :class:`Done`.
Every wait of the launcher is bounded (:func:`broker_timeout`): a socket that accepts
and never answers — not a broker — is :class:`BrokerSilent`, never a hang.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import socket
import time
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["BROKER_TIMEOUT", "HEARTBEAT", "Acquire", "BrokerSilent", "Channel", "Done",
           "Grant", "Message", "Pause", "Queued", "Report", "Requeue", "Resume", "ask",
           "broker_timeout", "decode", "encode", "tell"]

#: seconds between the broker's :class:`Queued` while a job waits: a launcher that hears
#: nothing knows the socket is not a broker
HEARTBEAT = 5


@dataclass(frozen=True)
class Acquire:
    """Launcher → broker: run this compile (or link) job."""

    OP: ClassVar[str] = "acquire"
    file: str = ""  # the source it compiles (a link: the file it writes), absolute
    argv: tuple[str, ...] = ()
    cwd: str = ""
    retry: bool = False  # the retry of a job killed out of memory
    requeued: bool = False  # the run again of a job the broker requeued
    kind: str = "compile"  # compile | link
    cgroup: str = ""  # the job's own cgroup ("": none)
    build_cgroup: str = ""  # the build's cgroup, which the backstop watches ("": none)
    #: offered to the distributed pool: the pool's description and the remote slot the
    #: launcher holds ("" and -1: not offered; :mod:`builder.memory.remote`)
    dist_pool: str = ""
    dist_index: int = -1


@dataclass(frozen=True)
class Queued:
    """Broker → launcher, at once and every :data:`HEARTBEAT` seconds while it waits."""

    OP: ClassVar[str] = "queued"


@dataclass(frozen=True)
class Grant:
    """Broker → launcher: start the compiler."""

    OP: ClassVar[str] = "grant"
    lowmem: bool = False  # add ``flags``, the recipe's low-memory tier
    alone: bool = False
    flags: tuple[str, ...] = ()
    estimate: int = 0
    source: str = ""
    remote: bool = False  # compile on the distributed pool (through sccache)


@dataclass(frozen=True)
class Pause:
    OP: ClassVar[str] = "pause"


@dataclass(frozen=True)
class Resume:
    OP: ClassVar[str] = "resume"


@dataclass(frozen=True)
class Requeue:
    """Broker → launcher: kill the compile and ask again (its work is lost)."""

    OP: ClassVar[str] = "requeue"


@dataclass(frozen=True)
class Report:
    """Launcher → broker while the compiler runs: its tree's CPU seconds and memory."""

    OP: ClassVar[str] = "progress"
    cpu: float = 0.0
    rss: int = 0
    paused: bool = False


@dataclass(frozen=True)
class Done:
    """Launcher → broker: the compile ended, with what it measured."""

    OP: ClassVar[str] = "done"
    rc: int | None = None
    peak: int = 0
    seconds: float = 0.0
    cpu: float = 0.0
    paused: float = 0.0
    procs: int = 2  # most processes in its tree (1: a compiler cache's hit)
    oom: bool = False
    curve: tuple[float, ...] = ()
    requeued: bool = False
    measured_by: str = ""  # cgroup | tree


Message = Acquire | Queued | Grant | Pause | Resume | Requeue | Report | Done
_TYPES: dict[str, type[Any]] = {t.OP: t for t in (Acquire, Queued, Grant, Pause, Resume,
                                                    Requeue, Report, Done)}


def encode(msg: Message) -> bytes:
    """One line of JSON: the message's ``op`` and fields."""
    return (json.dumps({"op": msg.OP, **dataclasses.asdict(msg)}) + "\n").encode()


def _coerce(value: Any, default: Any, name: str) -> Any:
    if isinstance(default, bool):
        return bool(value)
    if isinstance(default, tuple):
        if not isinstance(value, list | tuple):
            raise ValueError(f"{name}: not a list")
        return tuple(value)
    if isinstance(default, int | float) or default is None:
        if value is None and default is None:
            return None
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ValueError(f"{name}: not a number")
        return type(default)(value) if default is not None else int(value)
    return str(value)


def decode(line: bytes) -> Message:
    """The message on one line (ValueError: not one of ours)."""
    raw = json.loads(line)
    if not isinstance(raw, dict) or raw.get("op") not in _TYPES:
        raise ValueError(f"not a message: {line[:80]!r}")
    cls = _TYPES[raw["op"]]
    kwargs = {f.name: _coerce(raw[f.name], f.default, f.name)
              for f in dataclasses.fields(cls) if f.name in raw}
    msg: Message = cls(**kwargs)
    return msg


def tell(conn: socket.socket, msg: Message) -> None:
    """Send without ever blocking the broker on a launcher that does not read."""
    with contextlib.suppress(OSError):
        conn.send(encode(msg), socket.MSG_DONTWAIT)


class Channel:
    """The launcher's side of its broker connection: JSON lines both ways; ``poll``
    waits up to a timeout for the broker's commands."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.inbox: list[Message] = []
        self.closed = False

    def send(self, msg: Message) -> None:
        try:
            self.sock.sendall(encode(msg))
        except OSError:
            self.closed = True

    def _receive(self, timeout: float | None) -> bool:
        """Wait up to ``timeout`` (None: for ever) for data; queue the complete lines.
        False: nothing came within ``timeout``."""
        try:
            if timeout is not None and not select.select([self.sock], [], [], timeout)[0]:
                return False
            data = self.sock.recv(65536)
        except (OSError, ValueError):
            data = b""
        if not data:
            self.closed = True
        self.buf += data
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            with contextlib.suppress(ValueError):
                self.inbox.append(decode(line))
        return True

    def poll(self, timeout: float) -> list[Message]:
        """Commands received within ``timeout`` seconds (none once the broker is gone)."""
        if self.closed:
            time.sleep(timeout)
        elif not self.inbox:
            self._receive(timeout)
        out, self.inbox = self.inbox, []
        return out

    def answer(self, timeout: float) -> Message | bool | None:
        """The broker's next message other than :class:`Queued` (False when it is gone);
        None when it said nothing at all for ``timeout`` seconds (a broker says
        :class:`Queued` every few seconds while a job waits)."""
        while True:
            while not self.inbox and not self.closed:
                if not self._receive(timeout):
                    return None
            if not self.inbox:
                return False
            msg = self.inbox.pop(0)
            if not isinstance(msg, Queued):
                return msg

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


#: seconds a launcher waits for any word from the broker (connect, answer, heartbeat)
#: before it runs its compiler without admission control; ``BUILDER_BROKER_TIMEOUT``
BROKER_TIMEOUT = 60.0


class BrokerSilent(OSError):
    """The socket accepted (or hung on connect) but no broker answered in time."""


def broker_timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("BUILDER_BROKER_TIMEOUT", BROKER_TIMEOUT)))
    except ValueError:
        return BROKER_TIMEOUT


def ask(path: str, msg: Acquire) -> tuple[Channel, Grant | None]:
    """Send ``msg`` to the broker at ``path`` and wait for its grant (None: the broker
    went away, or answered with something else)."""
    timeout = broker_timeout()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
    except TimeoutError:
        s.close()
        raise BrokerSilent(f"no connection within {timeout:g} s") from None
    except OSError:
        s.close()
        raise
    s.settimeout(None)
    ch = Channel(s)
    ch.send(msg)
    if ch.closed:
        raise OSError("the broker went away")
    grant = ch.answer(timeout)
    if grant is None:
        ch.close()
        raise BrokerSilent(f"no answer within {timeout:g} s")
    return ch, grant if isinstance(grant, Grant) else None


