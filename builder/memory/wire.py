"""The broker protocol, both ends: JSON lines over a Unix socket, one connection per job.

The launcher sends ``acquire``; the broker answers ``queued`` at once and again every
:data:`HEARTBEAT` seconds while the job waits, then ``grant`` (and later ``pause`` /
``resume``); the launcher sends ``progress`` lines and a final ``done``.  Every wait of the
launcher is bounded (:func:`broker_timeout`): a socket that accepts and never answers —
not a broker — is :class:`BrokerSilent`, never a hang.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import time
from typing import Any

__all__ = ["BROKER_TIMEOUT", "HEARTBEAT", "QUEUED", "BrokerSilent", "Channel", "ask",
           "broker_timeout", "message", "tell"]

#: what the broker says at once on an ``acquire``, and every :data:`HEARTBEAT` seconds
#: while the job waits: a launcher that hears nothing knows the socket is not a broker
QUEUED = b'{"op": "queued"}\n'
HEARTBEAT = 5


def tell(conn: socket.socket, msg: bytes) -> None:
    """Send without ever blocking the broker on a launcher that does not read."""
    with contextlib.suppress(OSError):
        conn.send(msg, socket.MSG_DONTWAIT)


def message(line: bytes) -> dict[str, Any]:
    """One line of a launcher's: a JSON object (ValueError: anything else)."""
    msg = json.loads(line)
    if not isinstance(msg, dict):
        raise ValueError(f"not a message: {line[:80]!r}")
    return msg


class Channel:
    """The launcher's side of its broker connection: JSON lines both ways; ``poll``
    waits up to a timeout for the broker's commands."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.inbox: list[dict[str, object]] = []
        self.closed = False

    def send(self, msg: dict[str, object]) -> None:
        try:
            self.sock.sendall((json.dumps(msg) + "\n").encode())
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
                self.inbox.append(json.loads(line))
        return True

    def poll(self, timeout: float) -> list[dict[str, object]]:
        """Commands received within ``timeout`` seconds (none once the broker is gone)."""
        if self.closed:
            time.sleep(timeout)
        elif not self.inbox:
            self._receive(timeout)
        out, self.inbox = self.inbox, []
        return out

    def read(self) -> dict[str, object]:
        """The next message, waiting for it ({} when the broker is gone)."""
        while not self.inbox and not self.closed:
            self._receive(None)
        return self.inbox.pop(0) if self.inbox else {}

    def answer(self, timeout: float) -> dict[str, object] | None:
        """The broker's next message other than ``queued`` ({} when it is gone); None when
        it said nothing at all for ``timeout`` seconds (a broker says ``queued`` every few
        seconds while a job waits)."""
        while True:
            while not self.inbox and not self.closed:
                if not self._receive(timeout):
                    return None
            if not self.inbox:
                return {}
            msg = self.inbox.pop(0)
            if msg.get("op") != "queued":
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


def ask(path: str, msg: dict[str, object]) -> tuple[Channel, dict[str, object]]:
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
    return ch, grant


