"""Progress while builder waits on a peer: a line every few seconds, so that a slow or
silent server is seen as one (every wait is bounded elsewhere; this says it is going on).

:func:`ticker` calls ``say(elapsed seconds)`` every :data:`PROGRESS_EVERY` seconds (or the
``every`` given) until its block ends — from a thread of its own, so a read that blocks on
a silent peer is no obstacle.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

__all__ = ["PROGRESS_EVERY", "ticker"]

#: seconds before the first "still waiting" line, and between two
PROGRESS_EVERY = 5.0


@contextlib.contextmanager
def ticker(say: Callable[[float], None], every: float | None = None) -> Iterator[None]:
    """``say(seconds since the block began)`` every ``every`` seconds (default
    :data:`PROGRESS_EVERY`, read when the block begins) while the block runs; an error in
    ``say`` stops the lines, never the wait."""
    period = PROGRESS_EVERY if every is None else every
    done = threading.Event()
    start = time.monotonic()

    def tick() -> None:
        while not done.wait(period):
            try:
                say(time.monotonic() - start)
            except Exception:  # the display's fault: the wait goes on without lines
                return

    t = threading.Thread(target=tick, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join(1.0)
