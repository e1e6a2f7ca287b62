"""Ctrl-C, said once: the message, and a second interrupt ignored while exiting."""

from __future__ import annotations

import contextlib
import signal
import sys

__all__ = ["ignore_interrupts", "interrupted"]


def interrupted() -> int:
    """Say so once and ignore further Ctrl-C while exiting (a second one must not turn
    the exit into a death by signal or a traceback)."""
    ignore_interrupts()
    with contextlib.suppress(OSError):
        print("error: interrupted", file=sys.stderr, flush=True)
    return 130


def ignore_interrupts() -> None:
    with contextlib.suppress(ValueError):  # ValueError: not the main thread
        signal.signal(signal.SIGINT, signal.SIG_IGN)
