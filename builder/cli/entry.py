"""The ``builder`` executable's first frame: nothing is imported before Ctrl-C is
handled, so an interrupt during start-up (importing the CLI takes a few hundred
milliseconds) exits 130 with one line, like one during a build, never a traceback."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Sequence

from builder.cli.interrupts import interrupted

__all__ = ["main", "run"]


#: Ctrl-C arrived (set by :func:`_on_sigint`, which raises KeyboardInterrupt as Python's
#: own handler does)
_SEEN: list[int] = []


def _on_sigint(signum: int, frame: object) -> None:
    _SEEN.append(signum)
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI, with Ctrl-C said once.  An interrupt that cuts an import short does not
    always surface as KeyboardInterrupt: compiling a module whose strings need the
    ``unicodedata`` module turns it into a SyntaxError, an extension module's loader into
    an ImportError.  So any exception that escapes after a Ctrl-C arrived is the
    interrupt, never a traceback."""
    _SEEN.clear()
    with contextlib.suppress(ValueError):  # ValueError: not the main thread
        signal.signal(signal.SIGINT, _on_sigint)
    try:
        from builder.cli.main import main as cli_main

        return cli_main(argv)
    except KeyboardInterrupt:
        return interrupted()
    except Exception:
        if _SEEN:
            return interrupted()
        raise


def run() -> None:
    """The executable (console script and ``python -m builder``).  After an interrupt the
    process leaves at once with 130: letting the interpreter finalize after a
    KeyboardInterrupt that cut an import short sometimes made it die by SIGINT instead
    (measured: 5 of 30 runs of ``python -m builder`` interrupted during start-up)."""
    code = main()
    if code == 130:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(130)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    run()
