"""Ctrl-C and SIGTERM, said once: the message, the exit status, and a second interrupt
ignored while exiting.

Both signals stop a command the same way — :class:`KeyboardInterrupt` in the main thread,
which the runner turns into stopping the running child's whole process group — and differ
only in what is said and returned: ``error: interrupted`` and 130 for SIGINT,
``error: terminated (SIGTERM)`` and 143 for SIGTERM (a CI job cancelled, ``kill``).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["exit_code", "ignore_interrupts", "interrupted", "message", "signal_stops"]

_received: list[int] = []  # the stopping signal, once one arrived


def exit_code() -> int:
    """130 after Ctrl-C, 143 after SIGTERM (128 + the signal's number)."""
    return 143 if signal.SIGTERM in _received else 130


def message(text: str = "interrupted") -> str:
    """``text`` as said after the signal that stopped the command."""
    if signal.SIGTERM in _received:
        return text.replace("interrupted", "terminated (SIGTERM)", 1)
    return text


def interrupted() -> int:
    """Say so once and ignore further Ctrl-C while exiting (a second one must not turn
    the exit into a death by signal or a traceback)."""
    ignore_interrupts()
    with contextlib.suppress(OSError, ValueError):
        print(message("error: interrupted"), file=sys.stderr, flush=True)
    return exit_code()


def ignore_interrupts() -> None:
    with contextlib.suppress(ValueError):  # ValueError: not the main thread
        signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def signal_stops() -> Iterator[None]:
    """While inside, SIGTERM stops the command like Ctrl-C (the running child's process
    group is stopped, nothing is left running) and is remembered for :func:`exit_code`."""
    _received.clear()

    def on_sigterm(signum: int, frame: object) -> None:
        _received.append(signum)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, TypeError):
            signal.signal(signal.SIGTERM, previous)
